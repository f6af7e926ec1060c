// `run --repeat K` with each round in a process of its own (the default): what differs from run
// to run (memory placement, clock, the state of the allocator's heap) is then sampled by the
// rounds, which rounds inside one process cannot see.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "result/result.hpp"

namespace CLI {
class App;
}

namespace pinbench::app {

/// The options of `run` that a round's process is given by run_rounds_in_processes itself, or
/// that concern only what the starting process shows and writes. Every other option given to
/// `run`, one added tomorrow included, reaches each round as it was typed.
extern const std::array<std::string_view, 9> options_rounds_set_themselves;

/// The arguments of `pinbench run` for one round's process, from `run`, the subcommand as this
/// process parsed it: every option given here, as typed (a flag with its value), except
/// options_rounds_set_themselves, with `backend` as resolved here (so that every round measures
/// the same device). An option added to `run` reaches the rounds without a line here.
[[nodiscard]] std::vector<std::string> round_run_args(const CLI::App& run,
                                                      std::string_view backend);

struct round_process_plan {
  /// The arguments of `pinbench run` for one round, without the round, output and snapshot
  /// (inputs, --set, the resolved --backend, --seed, faults, limits).
  std::vector<std::string> run_args;
  std::uint32_t rounds = 1;
  std::string snapshot;  ///< `--snapshot`: the first round's process writes it
  /// This process's plan::fingerprint: each round's process plans again and refuses to measure
  /// a plan whose fingerprint differs (`--plan-fingerprint`).
  std::string fingerprint;
  bool quiet = false;
};

/// Runs the rounds one after another, each as `pinbench run ... --round R --out TMP` (this very
/// executable), and merges their results, each round labelled. Ctrl-C is passed on to the
/// running round, whose completed cases are kept; later rounds do not start (the result says
/// interrupted). A round that cannot start or exits with 2 or 3 throws with its reason.
[[nodiscard]] result::run_result run_rounds_in_processes(const round_process_plan& plan);

}  // namespace pinbench::app
