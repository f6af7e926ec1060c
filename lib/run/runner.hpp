// The runner: takes a plan to a result, every case of every scenario in rounds, each case
// measured by its kind's engine (from the kind registry).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/backend.hpp"
#include "device/numa.hpp"
#include "device/platform.hpp"
#include "dist/communicator.hpp"
#include "result/result.hpp"
#include "run/plan.hpp"

namespace pinbench::run {

/// How one plan is measured here: what the result records of the command, and who is told.
struct run_options {
  std::string command_line;
  bool want_snapshots = false;  ///< see measure::run_context::want_snapshots
  /// Called before each case (index from 0, total, scenario name, case id) for progress lines.
  std::function<void(std::size_t, std::size_t, const std::string&, const std::string&)> on_case;
  /// Called after each case with the same index, total and scenario name, and its result.
  std::function<void(std::size_t, std::size_t, const std::string&, const result::case_result&)>
      on_case_done;
  /// Run only this round of the plan's `repeat` (its order as in a run of them all),
  /// unlabelled: one process of `run --repeat K` with rounds in processes.
  std::optional<std::uint32_t> only_round;
  /// The launch's processes; null = this process alone. With more than one, every rank runs
  /// the same cases in the same order, meeting before each case (so that a kind spanning the
  /// processes finds them all there, and Ctrl-C on any rank stops them all).
  dist::communicator* world = nullptr;
  /// The devices a kind that drives several may open (measure::run_context::platform); null:
  /// only the backend the run measures on.
  const device::platform* platform = nullptr;
  /// `run --telemetry-device`: the NVML device each case's telemetry watches: "auto" (the CUDA
  /// device itself; none on the host backend), "off", or an NVML index (run/case_telemetry.hpp).
  std::string telemetry_device = "auto";
  /// `run --discard-on-throttle`: samples taken while the watched device throttled are retaken.
  bool discard_on_throttle = false;
  /// `--numa`: resolved against the device once, before the first case
  /// (measure::run_context::numa).
  device::numa_request numa;
};

/// A lost rank as the result records it: {rank (null when the transport cannot tell), message,
/// stopped_by_lead (this rank did not see the loss: rank 0 stopped the launch)}.
[[nodiscard]] nlohmann::json lost_rank_json(const dist::rank_lost_error& e);

/// A result with nothing measured yet: the tool, the time, the backend, the seed and the
/// command line (the environment block is added when the cases have run).
[[nodiscard]] result::run_result new_result(const device::backend& dev, std::uint64_t seed,
                                            const std::string& command_line);

/// Runs every case of the plan on `dev`, the plan's `repeat` rounds of them: each round's cases
/// in a seeded random order (one round keeps the declared order), so that slow drift of the
/// machine spreads over all of them; the samples keep the round they came from. A failed case
/// is recorded ("error" + message) and the run goes on. A lost rank ends the run with the cases
/// completed before it (run_result::lost_rank set). On Ctrl-C, SIGTERM or SIGHUP the current case
/// is recorded as interrupted and the result holds every case completed so far
/// (run_result::interrupted and interrupted_by set).
[[nodiscard]] result::run_result run_scenarios(const plan& p, device::backend& dev,
                                               const run_options& options);

/// The `environment.device` block: the backend's description as JSON; uuid, driver, runtime and
/// pcie are null where the backend has none, the CUDA device's other facts left out.
[[nodiscard]] nlohmann::json device_json(const device::description& d);

/// The `environment` block: backend, device (device_json of describe()), host, warnings.
[[nodiscard]] nlohmann::json environment_block(device::backend& dev);

/// The `process` block: figures a soak run compares from run to run (peak RSS, open files),
/// read now: take it just before the result is written.
[[nodiscard]] nlohmann::json process_block();

}  // namespace pinbench::run
