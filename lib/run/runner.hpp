// The runner: takes validated scenarios to a result, every case of every scenario in rounds,
// each case measured by its kind's engine (from the kind registry).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/backend.hpp"
#include "dist/communicator.hpp"
#include "result/result.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::run {

struct run_options {
  std::vector<scenario::override_spec> overrides;
  std::uint64_t seed = 0;
  std::string command_line;
  bool want_snapshots = false;  ///< see measure::run_context::want_snapshots
  /// Called before each case (index from 0, total, scenario name, case id) for progress lines.
  std::function<void(std::size_t, std::size_t, const std::string&, const std::string&)> on_case;
  /// Called after each case with the same index, total and scenario name, and its result.
  std::function<void(std::size_t, std::size_t, const std::string&, const result::case_result&)>
      on_case_done;
  /// Rounds (`run --repeat`): every case is measured this many times, the cases of a round in a
  /// seeded random order, so that slow drift of the machine spreads over all of them; the
  /// samples keep the round they came from (metric::rounds).
  std::uint32_t repeat = 1;
  /// Run only this round of the `repeat` (its order as in a run of them all), unlabelled: one
  /// process of `run --repeat K` with rounds in processes.
  std::optional<std::uint32_t> only_round;
  /// Refuse a scenario whose matrix expands to more cases than this (see scenario::expand).
  std::uint64_t max_cases = scenario::default_max_cases;
  /// The launch's processes; null = this process alone. With more than one, every rank runs
  /// the same cases in the same order, meeting before each case (so that a kind spanning the
  /// processes finds them all there, and Ctrl-C on any rank stops them all).
  dist::communicator* world = nullptr;
  /// How long a rank waits for the others at a meeting before it declares one lost; 0 = twice
  /// the longest case timeout of the run, plus a minute.
  dist::timeout rank_timeout{0};
  /// See measure::run_context::device_count and open_device.
  int device_count = 1;
  std::function<std::unique_ptr<device::backend>(int)> open_device = {};
};

/// A lost rank as the result records it: {rank (null when the transport cannot tell), message,
/// stopped_by_lead (this rank did not see the loss: rank 0 stopped the launch)}.
[[nodiscard]] nlohmann::json lost_rank_json(const dist::rank_lost_error& e);

/// How long a rank of this run waits for the others (options.rank_timeout, or its default).
[[nodiscard]] dist::timeout rank_timeout_of(const std::vector<scenario::scenario>& scenarios,
                                            const run_options& options);

/// Runs every case of every scenario on `dev`, `repeat` rounds of them. A failed case is recorded
/// ("error" + message) and the run goes on. A lost rank ends the run with the cases completed
/// before it (run_result::lost_rank set). On Ctrl-C, SIGTERM or SIGHUP the current case is recorded
/// as interrupted and the result holds every case completed so far (run_result::interrupted and
/// interrupted_by set).
[[nodiscard]] result::run_result run_scenarios(const std::vector<scenario::scenario>& scenarios,
                                       device::backend& dev, const run_options& options);

/// The `environment.device` block: the backend's description as JSON; uuid, driver, runtime and
/// pcie are null where the backend has none, the CUDA device's other facts left out.
[[nodiscard]] nlohmann::json device_json(const device::description& d);

/// The `environment` block: backend, device (device_json of describe()), host, warnings.
[[nodiscard]] nlohmann::json environment_block(device::backend& dev);

}  // namespace pinbench::run
