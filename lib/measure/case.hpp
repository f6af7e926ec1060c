// What an engine is given to measure: one case of a scenario and the rule for when to stop.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace pinbench::measure {

/// When to stop sampling a case (a scenario's "sampling" object).
struct sampling {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double max_noise = 0.01;            ///< relative standard deviation to reach
  std::int64_t min_time_ns = 200'000'000;
  std::int64_t timeout_ns = 10'000'000'000;
};

/// One point of the matrix: what an engine runs.
struct case_spec {
  std::string id;  ///< "memory=pinned,bytes=1MiB" from the matrix values as written; "default" when no matrix
  nlohmann::json params;  ///< complete and normalised
  struct sampling sampling;
  std::string source;  ///< the scenario's file (relative paths in params resolve against it)
};

}  // namespace pinbench::measure
