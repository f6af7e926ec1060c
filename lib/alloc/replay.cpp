// Replaying a trace for the allocator's decisions alone (alloc/replay.hpp).
#include "alloc/replay.hpp"

#include <unordered_map>
#include <unordered_set>

#include "alloc/follow.hpp"
#include "alloc/upstream.hpp"
#include "core/clock.hpp"
#include "core/interrupt.hpp"

namespace pinbench::alloc {

void adopt_start(device_allocator& allocator, const recording& rec,
                 std::unordered_map<std::uint64_t, void*>& live, std::vector<void*>& kept) {
  if (rec.start.empty()) return;
  const std::vector<void*> adopted = allocator.adopt(rec.start);
  std::size_t k = 0;
  for (const auto& seg : rec.start.segments)
    for (const auto& b : seg.live) {
      if (b.id != 0)
        live.emplace(b.id, adopted[k]);
      else
        kept.push_back(adopted[k]);
      ++k;
    }
}

trace_events read_all(event_source& source) {
  trace_events out;
  event e;
  while (source.next(e)) out.events.push_back(std::move(e));
  out.recorded = source.recorded();
  return out;
}

replay_outcome replay(const trace_events& trace, const config& conf, std::uint64_t capacity,
                      std::optional<double> memory_fraction, follow_pytorch follow) {
  replay_outcome out;
  const std::int64_t start = now_ns();
  // A snapshot's replay runs on PyTorch's addresses; others on a plain arena. Declared before
  // the allocator, so that the allocator goes first.
  std::unique_ptr<decision_follower> follower;
  std::unique_ptr<upstream> arena;
  if (trace.recorded) {
    follower = std::make_unique<decision_follower>(*trace.recorded, capacity,
                                                   follow == follow_pytorch::yes);
  } else {
    arena = make_arena_upstream(capacity);
  }
  upstream& device = follower ? static_cast<upstream&>(*follower) : *arena;
  const bool checking = follower && follow == follow_pytorch::yes;
  const auto allocator =
      make_caching_allocator(device, conf, memory_fraction, checking ? follower.get() : nullptr);
  std::unordered_map<std::uint64_t, void*> live;
  std::vector<void*> kept;                   // the start state's blocks that are never freed
  std::unordered_set<std::uint64_t> failed;  // ids whose allocation ran out of memory
  live.reserve(1024);
  if (trace.recorded) adopt_start(*allocator, *trace.recorded, live, kept);
  std::int64_t peak_reserved = -1;
  const auto& events = trace.events;
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    if ((i & 1023U) == 1023U && interrupt_requested()) {
      out.interrupted = true;
      break;
    }
    if (follower) follower->at_event(i);
    const event& e = events[i];
    switch (e.op) {
      case event::kind::alloc: {
        if (live.contains(e.id)) break;  // an id still live: skipped, as the engine does
        ++out.calls;
        try {
          void* const ptr = allocator->allocate(e.size, e.stream);
          live.emplace(e.id, ptr);
          if (checking) follower->on_placement(reinterpret_cast<std::uintptr_t>(ptr), e.size);
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
  if (checking && !out.interrupted) out.check = follower->check();
  out.elapsed_ns = now_ns() - start;
  return out;
}

}  // namespace pinbench::alloc
