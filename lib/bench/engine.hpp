// One engine per scenario kind, and the runner that takes validated scenarios to a result.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/result.hpp"
#include "device/backend.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::bench {

struct run_context {
  device::backend& dev;
  std::uint64_t seed = 0;
  /// `run --snapshot`: engines that can (allocator) put a memory snapshot in case_result::snapshot.
  bool want_snapshots = false;
};

/// Runs the cases of one kind. Throws on a failed case; the runner records it and goes on.
class engine {
 public:
  virtual ~engine() = default;
  [[nodiscard]] virtual std::string_view kind() const noexcept = 0;
  /// Runs one case: warm-up, samples until the sampling rule stops, verification.
  [[nodiscard]] virtual case_result run_case(const scenario::case_spec& c, run_context& ctx) = 0;
  /// A one-line conclusion over the scenario's cases once they ran ("" when the kind has none).
  [[nodiscard]] virtual std::string verdict(const scenario_result&) const { return {}; }
};

/// The engine for a kind, or nullptr when the kind has none yet.
[[nodiscard]] std::unique_ptr<engine> make_engine(std::string_view kind);

struct run_options {
  std::vector<scenario::override_spec> overrides;
  std::uint64_t seed = 0;
  std::string command_line;
  bool want_snapshots = false;  ///< see run_context::want_snapshots
  /// Called before each case (index from 0, total, scenario name, case id) for progress lines.
  std::function<void(std::size_t, std::size_t, const std::string&, const std::string&)> on_case;
  /// Called after each case with the same index, total and scenario name, and its result.
  std::function<void(std::size_t, std::size_t, const std::string&, const case_result&)>
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
};

/// Runs every case of every scenario on `dev`, `repeat` rounds of them. A failed case is recorded ("error" + message)
/// and the run goes on; on Ctrl-C the current case is recorded as interrupted and the result
/// holds every case completed so far (run_result::interrupted set).
[[nodiscard]] run_result run_scenarios(const std::vector<scenario::scenario>& scenarios,
                                       device::backend& dev, const run_options& options);

/// The `environment` block: backend, device (backend's describe()), host, warnings.
[[nodiscard]] nlohmann::json environment_block(device::backend& dev);

}  // namespace pinbench::bench
