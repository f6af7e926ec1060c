// The result model: what a run measured, before it is written as JSON, a table or CSV.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.hpp"
#include "device/backend.hpp"
#include "result/tune.hpp"

namespace pinbench::result {

/// Which way a metric improves; `none` for counters that only inform (never gated).
enum class direction { higher, lower, none };
/// "higher", "lower", "" (as the result file writes it).
[[nodiscard]] std::string_view to_string(direction d) noexcept;
[[nodiscard]] std::optional<direction> direction_from(std::string_view text) noexcept;

/// What became of a case: measured, failed, stopped by Ctrl-C, or not runnable here.
enum class case_status { ok, error, interrupted, skipped };
/// "ok", "error", "interrupted", "skipped" (as the result file writes it).
[[nodiscard]] std::string_view to_string(case_status s) noexcept;
[[nodiscard]] std::optional<case_status> case_status_from(std::string_view text) noexcept;

/// One measured quantity of a case, with every raw sample kept.
struct metric {
  std::string name;  ///< "bandwidth", "copy_time", "host_call_time", ...
  std::string unit;  ///< "GB/s", "ns", "fraction", "bytes", "count"
  direction better = direction::none;
  /// The engine guarantees the value for a given seed and scenario (the allocator's policy
  /// counters): `compare` judges it exactly. Anything that depends on timing is judged
  /// statistically, even when its samples happen to agree.
  bool deterministic = false;
  std::vector<double> samples;
  /// The round (`run --repeat`, from 0) each sample was measured in, parallel to `samples`;
  /// empty when the run had one round. `compare` resamples rounds, then samples within them.
  std::vector<std::uint32_t> rounds;
  [[nodiscard]] summary summarize() const;
};

/// Why sampling stopped.
enum class stop_reason { converged, max_samples, timeout, interrupted, single };
[[nodiscard]] std::string_view to_string(stop_reason r) noexcept;

struct case_result {
  std::string id;
  nlohmann::json params;  ///< as displayed (sizes and durations as people write them)
  case_status status = case_status::ok;
  std::string message;  ///< for errors, and why a case was skipped
  /// The launch's rank that measured it (`run` under mpirun, srun, torchrun): the id then
  /// starts with "rank=N," so that every rank's case stays its own in `compare`. Absent in a
  /// run of one process.
  std::optional<int> rank;
  std::vector<metric> metrics;
  stop_reason stopped = stop_reason::converged;
  double elapsed_s = 0;  ///< wall time spent on this case
  std::vector<std::string> warnings;
  nlohmann::json extra =
      nlohmann::json::object();  ///< kind-specific facts (verified, sample_count, ...)
  /// A memory snapshot (torch.cuda.memory._snapshot() structure) when one was asked for; null
  /// otherwise. Too big for the result file: `run --snapshot FILE` writes these to their own file.
  nlohmann::json snapshot;

  [[nodiscard]] const metric* find(std::string_view name) const;
  /// Adds a metric (or returns the one of that name). The reference is valid until the next add.
  metric& add(std::string name, std::string unit, direction better);
};

struct scenario_result {
  std::string name, description, kind, source;
  nlohmann::json gate = nlohmann::json::object();
  std::vector<case_result> cases;
  std::string verdict;  ///< the engine's one-line conclusion over the cases ("" = none)
};

struct run_result {
  std::string tool_version, tool_git;
  std::string created;                                  ///< UTC, ISO 8601
  std::string backend;                                  ///< "cuda" | "host"
  nlohmann::json environment;                           ///< {backend, device, host, warnings}
  nlohmann::json overrides = nlohmann::json::object();  ///< --set values as typed
  std::uint64_t seed = 0;
  std::uint32_t repeat = 1;  ///< rounds each case was measured in (`run --repeat`)
  std::string command_line;
  bool interrupted = false;
  /// The signal that stopped the run ("SIGINT", "SIGTERM", "SIGHUP"); "" when none did (and
  /// left out of the JSON).
  std::string interrupted_by;
  /// Under a launch, the rank that was lost and how: {rank (null when unknown), message}. The
  /// result then holds the cases completed before the loss. Null (left out) otherwise.
  nlohmann::json lost_rank;
  /// A launched run's processes: [{rank, local_rank, host, backend, device}], rank 0 first;
  /// null (and left out of the JSON) for a run of one process.
  nlohmann::json ranks;
  /// `pinbench run` fills it just before writing: {peak_rss_bytes, open_fds_at_end}. Null
  /// (and left out of the JSON) otherwise.
  nlohmann::json process;
  /// `pinbench tune`'s question, trials and answer (result/tune.hpp): each trial names a case
  /// of `scenarios`. None (and left out of the JSON) for a result of `run`.
  std::optional<tune_block> tune;
  std::vector<scenario_result> scenarios;

  [[nodiscard]] bool any_failed() const;
  /// The backend: `backend`, else environment.backend ("" when neither says).
  [[nodiscard]] std::string backend_name() const;
  /// The platform the result was measured on; none when it names no backend pinbench has.
  [[nodiscard]] std::optional<device::platform_kind> platform() const;
  /// Measured on the host backend's emulation: its figures are host figures (the machine's RAM
  /// and CPUs), never GPU figures.
  [[nodiscard]] bool emulated() const { return platform() == device::platform_kind::host; }
  /// A string of the environment block at `keys` (environment.device.name, .host.hostname);
  /// "" where it is missing or not a string.
  [[nodiscard]] std::string environment_text(std::initializer_list<const char*> keys) const;
};

/// The case id without the "rank=N," a launched run puts in front ("default" stays "default").
[[nodiscard]] std::string_view id_without_rank(const case_result& c) noexcept;

/// Summary over the finite samples only: a NaN must not reach the sort in summarize().
[[nodiscard]] summary finite_summary(const metric& m);

/// The median of a case's metric over its finite samples; nullopt when the case has no such
/// metric or no finite sample of it. What verdicts are made from.
[[nodiscard]] std::optional<double> finite_median(const case_result& c, std::string_view metric);

/// A case's params as text, nested objects flattened to dotted names as --set writes them
/// ("dataset.samples"); strings as they are, other values as JSON, null as "".
[[nodiscard]] std::map<std::string, std::string> flat_params(const nlohmann::json& params);

/// One case measured in several rounds, as one result: the samples of every round that completed,
/// each labelled with its round (`round_of[i]` for `rounds[i]`), the first completed round's
/// facts, and the worst status (error, then skipped; an interrupted round is left out with a
/// warning). A single round is returned as it is, unlabelled.
[[nodiscard]] case_result merge_rounds(std::vector<case_result> rounds,
                                       const std::vector<std::uint32_t>& round_of);

/// Several results of the same suite (rounds run as separate processes, or the last runs of a
/// baseline) as one: cases paired by scenario name and case id, their rounds relabelled so that
/// each file's rounds stay distinct. Environment, version and seed are the first file's.
[[nodiscard]] run_result merge_runs(std::vector<run_result> runs);

}  // namespace pinbench::result
