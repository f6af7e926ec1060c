// A run's plan: every input loaded, checked and expanded exactly once, before anything is
// measured. `run`, `validate`, the launch's same-inputs check and the runner all read the plan;
// nothing after it parses a scenario or lists a folder again.
//   inputs (files, built-ins, --set, seed, limits) -> plan -> run::execute -> result -> report
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "dist/communicator.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::run {

struct planned_scenario;

/// What shapes the cases a plan holds, beyond the scenarios themselves.
struct plan_settings {
  std::vector<scenario::override_spec> overrides;  ///< `--set`
  std::uint64_t seed = 0;
  /// Refuse a scenario whose matrix expands to more cases than this (see scenario::expand).
  std::uint64_t max_cases = scenario::default_max_cases;
  /// Rounds (`run --repeat`): every case measured this many times (see run_scenarios).
  std::uint32_t repeat = 1;
  /// Under a launch, how long a rank waits for the others at a meeting before it declares one
  /// lost; 0 = twice the longest case timeout of the plan, plus a minute.
  dist::timeout rank_timeout{0};
  /// False (`validate`): every case is built and checked one at a time and none is kept, so a
  /// matrix of any buildable size fits in memory; one beyond scenario::max_built_cases is only
  /// counted.
  bool keep_cases = true;
  /// Called as each scenario is planned, in order (validate prints its line): what was planned
  /// before a bad input is known.
  std::function<void(const planned_scenario&)> on_planned = {};
};

/// One scenario of the plan with its expanded cases.
struct planned_scenario {
  scenario::scenario spec;
  std::vector<scenario::case_spec> cases;  ///< in matrix order; empty when not kept
  std::uint64_t case_count = 0;            ///< the cases it expands to, kept or not
  bool counted_only = false;  ///< not kept: beyond scenario::max_built_cases, only counted
};

struct plan {
  std::vector<planned_scenario> scenarios;
  plan_settings settings;
  /// The cases of one round, every scenario together.
  std::uint64_t total_cases = 0;
  /// How long a rank waits for the others (settings.rank_timeout, or its default from the cases).
  dist::timeout rank_timeout{0};
  /// The files the plan reads (scenario files, a case's trace): no output may replace one.
  std::vector<named_file> input_files;

  /// A digest of what must be the same on every rank of a launch for their cases to be
  /// comparable and their collectives to meet: the expanded cases, the overrides, the seed,
  /// the rounds and `platform` (the backend and its options). Not the files: the same scenario
  /// read from another path is the same run.
  [[nodiscard]] std::string fingerprint(const nlohmann::json& platform) const;
};

/// Checks every override against every scenario, expands each scenario once (a user's folder
/// read by many cases is read once: measure::input_cache) and gathers the plan's facts. Throws
/// input_error for any bad input, before anything is measured.
[[nodiscard]] plan make_plan(std::vector<scenario::scenario> scenarios, plan_settings settings);

/// make_plan over the inputs of `run` and `validate`: files, folders of them, builtin:NAME,
/// none = the built-in quick suite (scenario::load_inputs), and `--set` texts.
[[nodiscard]] plan make_plan(const std::vector<std::string>& inputs,
                             const std::vector<std::string>& sets, plan_settings settings);

}  // namespace pinbench::run
