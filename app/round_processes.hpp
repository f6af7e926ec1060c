// `run --repeat K` with each round in a process of its own (the default): what differs from run
// to run (memory placement, clock, the state of the allocator's heap) is then sampled by the
// rounds, which rounds inside one process cannot see.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "result/result.hpp"
#include "run_args.hpp"

namespace pinbench::app {

/// The arguments of `pinbench run` for one round's process: everything that shapes the
/// measurement, with `backend` as resolved here (so that every round measures the same device).
[[nodiscard]] std::vector<std::string> round_run_args(const run_args& a, std::string_view backend);

struct round_process_plan {
  /// The arguments of `pinbench run` for one round, without the round, output and snapshot
  /// (inputs, --set, the resolved --backend, --seed, faults, limits).
  std::vector<std::string> run_args;
  std::uint32_t rounds = 1;
  std::string snapshot;  ///< `--snapshot`: the first round's process writes it
  bool quiet = false;
};

/// Runs the rounds one after another, each as `pinbench run ... --round R --out TMP` (this very
/// executable), and merges their results, each round labelled. Ctrl-C is passed on to the
/// running round, whose completed cases are kept; later rounds do not start (the result says
/// interrupted). A round that cannot start or exits with 2 or 3 throws with its reason.
[[nodiscard]] result::run_result run_rounds_in_processes(const round_process_plan& plan);

}  // namespace pinbench::app
