// Executing a plan: under a launch the ranks first agree that they hold the same plan; then the
// cases are measured (on this process's device, or by round processes); then every rank's cases
// become one result, and the rank that writes it is named.
#pragma once

#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "device/platform.hpp"
#include "dist/communicator.hpp"
#include "dist/launch.hpp"
#include "result/result.hpp"
#include "run/plan.hpp"
#include "run/runner.hpp"

namespace pinbench::run {

struct execute_options {
  const device::platform* platform = nullptr;  ///< required: what the run measures on
  dist::communicator* world = nullptr;         ///< required: size 1 when not launched
  dist::launch_info launch;
  /// How long the ranks wait for each other at their first meeting (the same-inputs check).
  dist::timeout first_meeting{0};
  /// What the ranks' fingerprint compares besides the plan: the backend and its options.
  nlohmann::json platform_settings;
  /// The command line, snapshots and progress hooks (world and platform are set from above).
  run_options measuring;
  /// Measures the plan elsewhere (each round in a process of its own) and returns the result;
  /// empty: measured here, on the platform's home device.
  std::function<result::run_result()> measure_elsewhere;
  /// Called once every rank holds the same plan, before the first case.
  std::function<void()> on_start;
};

struct outcome {
  result::run_result result;
  /// The device measured on, kept open until the result is written (the `process` block's
  /// figures are read with it open, as the cases ran); null when rounds measured elsewhere.
  std::unique_ptr<device::backend> device;
  bool interrupted = false;  ///< a signal here, or on another rank or round
  bool lost = false;         ///< a rank was lost: the launch ends once the writer wrote
  bool writer = false;       ///< this rank reports and writes the result
};

/// Runs the plan. Throws input_error when the ranks hold different plans (every rank the same),
/// dist::rank_lost_error when a rank is lost before the first case.
[[nodiscard]] outcome execute(const plan& p, const execute_options& options);

}  // namespace pinbench::run
