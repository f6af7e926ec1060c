// Executing a plan, alone or as one rank of a launch.
#include "run/execute.hpp"

#include <string>

#include "core/interrupt.hpp"
#include "run/ranks.hpp"

namespace pinbench::run {

outcome execute(const plan& p, const execute_options& options) {
  dist::communicator& world = *options.world;
  const bool launched = world.size() > 1;
  outcome out;
  // The device first: one that cannot be opened is this rank's error (exit 3) before the ranks
  // meet. Rounds in processes open it themselves; it is opened here only to be found usable.
  out.device = options.platform->open_home();
  if (options.measure_elsewhere) out.device.reset();
  // Different inputs on different ranks would measure different things under one name, and a
  // collective would wait for a partner that never comes: refused before anything runs.
  if (launched)
    check_same_inputs(world, p.fingerprint(options.platform_settings), options.first_meeting);
  if (options.on_start) options.on_start();

  result::run_result result;
  if (options.measure_elsewhere) {
    result = options.measure_elsewhere();
    result.command_line = options.measuring.command_line;
  } else {
    run_options measuring = options.measuring;
    measuring.world = &world;
    measuring.platform = options.platform;
    result = run_scenarios(p, *out.device, measuring);
  }
  if (launched) {
    result.process = process_block();
    const auto entry = rank_entry(options.launch, world.transport(), result.environment);
    if (result.lost_rank.is_null()) {
      try {
        result = gather_ranks(world, result, entry, p.rank_timeout);
      } catch (const dist::rank_lost_error& e) {
        result.lost_rank = lost_rank_json(e);
      }
    }
    // After a loss the ranks cannot meet again: the result is this rank's own cases.
    if (!result.lost_rank.is_null()) result = merge_ranks({result}, {entry});
    result.command_line = options.measuring.command_line;
  }

  // A signal after the last case still says "interrupted" by its exit code; the result is whole.
  out.interrupted = result.interrupted || interrupt_requested();
  // The signal this process got names the stop; else the one another rank or round got.
  if (out.interrupted && interrupt_requested()) result.interrupted_by = interrupt_signal_name();
  out.lost = !result.lost_rank.is_null();
  // Rank 0 reports for every rank. After a loss, the rank that writes is rank 0, or rank 1 when
  // rank 0 is the one lost; it tells the others to stop waiting.
  out.writer = out.lost ? writes_after_loss(world.rank(), result.lost_rank) : world.rank() == 0;
  if (out.lost && out.writer)
    world.stop_others("rank " + std::to_string(world.rank()) + " writes the result");
  out.result = std::move(result);
  return out;
}

}  // namespace pinbench::run
