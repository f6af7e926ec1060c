// The result model: what a run measured, before it is written as JSON, a table or CSV.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.hpp"

namespace pinbench::bench {

/// One measured quantity of a case, with every raw sample kept.
struct metric {
  std::string name;    ///< "bandwidth", "copy_time", "host_call_time", ...
  std::string unit;    ///< "GB/s", "ns", "fraction", "bytes", "count"
  std::string better;  ///< "higher" or "lower" (or "" when neither: counters that only inform)
  std::vector<double> samples;
  [[nodiscard]] summary summarize() const;
};

/// Why sampling stopped.
enum class stop_reason { converged, max_samples, timeout, interrupted, single };
[[nodiscard]] std::string_view to_string(stop_reason r) noexcept;

struct case_result {
  std::string id;
  nlohmann::json params;  ///< as displayed (sizes and durations as people write them)
  std::string status = "ok";  ///< "ok" | "error" | "interrupted" | "skipped"
  std::string message;        ///< for errors, and why a case was skipped
  std::vector<metric> metrics;
  stop_reason stopped = stop_reason::converged;
  double elapsed_s = 0;       ///< wall time spent on this case
  std::vector<std::string> warnings;
  nlohmann::json extra = nlohmann::json::object();  ///< kind-specific facts (verified, sample_count, ...)
  /// A memory snapshot (torch.cuda.memory._snapshot() structure) when one was asked for; null
  /// otherwise. Too big for the result file: `run --snapshot FILE` writes these to their own file.
  nlohmann::json snapshot;

  [[nodiscard]] const metric* find(std::string_view name) const;
  /// Adds a metric (or returns the one of that name). The reference is valid until the next add.
  metric& add(std::string name, std::string unit, std::string better);
};

struct scenario_result {
  std::string name, description, kind, source;
  nlohmann::json gate = nlohmann::json::object();
  std::vector<case_result> cases;
  std::string verdict;  ///< the engine's one-line conclusion over the cases ("" = none)
};

struct run_result {
  std::string tool_version, tool_git;
  std::string created;          ///< UTC, ISO 8601
  std::string backend;          ///< "cuda" | "host"
  nlohmann::json environment;   ///< {backend, device, host, warnings}
  nlohmann::json overrides = nlohmann::json::object();  ///< --set values as typed
  std::uint64_t seed = 0;
  std::string command_line;
  bool interrupted = false;
  /// `pinbench run` fills it just before writing: {peak_rss_bytes, open_fds_at_end}. Null
  /// (and left out of the JSON) otherwise.
  nlohmann::json process;
  std::vector<scenario_result> scenarios;

  [[nodiscard]] bool any_failed() const;
};

}  // namespace pinbench::bench
