// A trace replayed for the allocator's decisions alone: no per-call timing, no observation,
// the events read once and replayed under many settings, from as many threads as there are
// settings (each replay has its own allocator and upstream). What `pinbench tune allocator`
// screens settings with; the allocator kind's engine measures the ones it keeps.
// Out of memory follows the engine's rule: the allocation is skipped, and so is its free.
// A PyTorch snapshot is replayed from the memory its recording began with, and under the
// snapshot's own settings it follows PyTorch's decisions and checks itself against them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/recording.hpp"
#include "alloc/workload.hpp"

namespace pinbench::alloc {

/// A trace read whole: its events, and what a PyTorch snapshot recorded beside them.
struct trace_events {
  std::vector<event> events;
  std::shared_ptr<const recording> recorded;  ///< none for other traces
};

struct replay_outcome {
  memory_stats stats;  ///< at the end of the events, before what is still live is freed
  std::uint64_t ooms = 0;
  /// The index in the event stream of the first allocation that ran out of memory.
  std::optional<std::uint64_t> first_oom_event;
  std::string first_oom;  ///< its message, as PyTorch words it
  /// Reserved and allocated bytes when reserved memory reached its highest point: their
  /// difference is the cached memory the peak carried.
  std::uint64_t reserved_at_peak = 0, allocated_at_peak = 0;
  std::uint64_t calls = 0;      ///< allocator calls: allocs (failed ones too), frees, empty_cache
  std::int64_t elapsed_ns = 0;  ///< the whole replay: the calls and the replay's bookkeeping
  bool interrupted = false;     ///< a stop was asked for: the outcome covers part of the events
  /// A replay that followed PyTorch's decisions: how far it reproduced them.
  std::optional<decision_check> check;
};

/// Takes over a recording's start state (device_allocator::adopt) and enters its live blocks
/// under the ids the trace frees them with in `live`; those it never frees go to `kept`.
void adopt_start(device_allocator& allocator, const recording& rec,
                 std::unordered_map<std::uint64_t, void*>& live, std::vector<void*>& kept);

/// Every event of a source, in order, and its recording (a trace is replayed many times: read
/// it once).
[[nodiscard]] trace_events read_all(event_source& source);

/// Whether a replay of a snapshot follows PyTorch's decisions (its addresses, its failed
/// cudaMalloc calls) and checks itself against them: only meaningful under the settings the
/// snapshot's program ran with.
enum class follow_pytorch : bool { no, yes };

/// The events replayed on a fresh caching allocator with `conf` over an emulated device of
/// `capacity` bytes (no memory is touched), set_per_process_memory_fraction as given, from the
/// recording's start state when there is one. Polls the stop flag (Ctrl-C) as it goes.
[[nodiscard]] replay_outcome replay(const trace_events& trace, const config& conf,
                                    std::uint64_t capacity, std::optional<double> memory_fraction,
                                    follow_pytorch follow = follow_pytorch::no);

}  // namespace pinbench::alloc
