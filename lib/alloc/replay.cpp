// Replaying a trace for the allocator's decisions alone (alloc/replay.hpp).
#include "alloc/replay.hpp"

#include <unordered_map>
#include <unordered_set>

#include "alloc/upstream.hpp"
#include "core/clock.hpp"
#include "core/interrupt.hpp"

namespace pinbench::alloc {

std::vector<event> read_all(event_source& source) {
  std::vector<event> events;
  event e;
  while (source.next(e)) events.push_back(std::move(e));
  return events;
}

replay_outcome replay(const std::vector<event>& events, const config& conf,
                      std::uint64_t capacity, std::optional<double> memory_fraction) {
  replay_outcome out;
  const std::int64_t start = now_ns();
  // Declared in this order so that the allocator goes before its upstream.
  const auto upstream = make_arena_upstream(capacity);
  const auto allocator = make_caching_allocator(*upstream, conf, memory_fraction);
  std::unordered_map<std::uint64_t, void*> live;
  std::unordered_set<std::uint64_t> failed;  // ids whose allocation ran out of memory
  live.reserve(1024);
  std::int64_t peak_reserved = -1;
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    if ((i & 1023U) == 1023U && interrupt_requested()) {
      out.interrupted = true;
      break;
    }
    const event& e = events[i];
    switch (e.op) {
      case event::kind::alloc: {
        if (live.contains(e.id)) break;  // an id still live: skipped, as the engine does
        ++out.calls;
        try {
          live.emplace(e.id, allocator->allocate(e.size, e.stream));
        } catch (const oom_error& oom) {
          ++out.ooms;
          if (!out.first_oom_event) {
            out.first_oom_event = i;
            out.first_oom = oom.what();
          }
          failed.insert(e.id);
          break;
        }
        // Reserved memory only grows inside an allocation: its peak is seen right after one.
        const memory_stats s = allocator->stats();
        if (s.reserved_bytes.all.current > peak_reserved) {
          peak_reserved = s.reserved_bytes.all.current;
          out.reserved_at_peak = static_cast<std::uint64_t>(s.reserved_bytes.all.current);
          out.allocated_at_peak = static_cast<std::uint64_t>(s.allocated_bytes.all.current);
        }
        break;
      }
      case event::kind::free: {
        const auto it = live.find(e.id);
        if (it == live.end()) {
          failed.erase(e.id);
          break;
        }
        ++out.calls;
        allocator->deallocate(it->second);
        live.erase(it);
        break;
      }
      case event::kind::empty_cache:
        ++out.calls;
        allocator->empty_cache();
        break;
      case event::kind::mark:
        break;
    }
  }
  out.stats = allocator->stats();
  for (auto& [id, ptr] : live) allocator->deallocate(ptr);
  out.elapsed_ns = now_ns() - start;
  return out;
}

}  // namespace pinbench::alloc
