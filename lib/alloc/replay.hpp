// A trace replayed for the allocator's decisions alone: no per-call timing, no observation,
// the events read once and replayed under many settings, from as many threads as there are
// settings (each replay has its own allocator and upstream). What `pinbench tune allocator`
// screens settings with; the allocator kind's engine measures the ones it keeps.
// Out of memory follows the engine's rule: the allocation is skipped, and so is its free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/workload.hpp"

namespace pinbench::alloc {

struct replay_outcome {
  memory_stats stats;  ///< at the end of the events, before what is still live is freed
  std::uint64_t ooms = 0;
  /// The index in the event stream of the first allocation that ran out of memory.
  std::optional<std::uint64_t> first_oom_event;
  std::string first_oom;  ///< its message, as PyTorch words it
  /// Reserved and allocated bytes when reserved memory reached its highest point: their
  /// difference is the cached memory the peak carried.
  std::uint64_t reserved_at_peak = 0, allocated_at_peak = 0;
  std::uint64_t calls = 0;          ///< allocator calls: allocs (failed ones too), frees, empty_cache
  std::int64_t elapsed_ns = 0;      ///< the whole replay: the calls and the replay's bookkeeping
  bool interrupted = false;         ///< a stop was asked for: the outcome covers part of the events
};

/// Every event of a source, in order (a trace is replayed many times: read it once).
[[nodiscard]] std::vector<event> read_all(event_source& source);

/// The events replayed on a fresh caching allocator with `conf` over an emulated device of
/// `capacity` bytes (an arena: no memory is touched), set_per_process_memory_fraction as given.
/// Polls the stop flag (Ctrl-C) as it goes.
[[nodiscard]] replay_outcome replay(const std::vector<event>& events, const config& conf,
                                    std::uint64_t capacity, std::optional<double> memory_fraction);

}  // namespace pinbench::alloc
