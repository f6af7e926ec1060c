// What an engine is given to measure: one case of a scenario and the rule for when to stop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace pinbench::measure {

/// When to stop sampling a case (a scenario's "sampling" object).
struct sampling {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double max_noise = 0.01;  ///< relative standard deviation to reach
  std::int64_t min_time_ns = 200'000'000;
  std::int64_t timeout_ns = 10'000'000'000;
};

/// A case's params in its kind's own struct, parsed once when the scenario is expanded
/// (kinds::kind_spec::parse_case); an engine reads it with params_of<T>().
struct case_params {
  virtual ~case_params() = default;
  /// The files the case reads (an allocator's trace): no output of the run may replace one.
  [[nodiscard]] virtual std::vector<std::string> input_files() const { return {}; }
};

/// One point of the matrix: what an engine runs.
struct case_spec {
  std::string id;  ///< "memory=pinned,bytes=1MiB" from the matrix values as written; "default" when
                   ///< no matrix
  nlohmann::json params;                     ///< complete and normalised (what the result shows)
  std::shared_ptr<const case_params> typed;  ///< the same params, parsed by the kind
  struct sampling sampling;
  std::string source;  ///< the scenario's file (relative paths in params resolve against it)
};

/// The case's params as its kind's struct `T`. Throws error when the kind parsed none of that
/// type (a case_spec made without the scenario loader).
template <class T>
[[nodiscard]] const T& params_of(const case_spec& c) {
  const auto* typed = dynamic_cast<const T*>(c.typed.get());
  if (typed == nullptr)
    throw error("case \"" + c.id + "\": its params were not parsed by its kind");
  return *typed;
}

}  // namespace pinbench::measure
