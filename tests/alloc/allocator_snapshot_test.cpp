// Snapshots of the allocators: segments covered exactly by their blocks, block states, and the
// trace of a small scripted sequence in order.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "alloc_support.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;
using pinbench::testing::addr;

namespace {

/// Blocks lie back to back from the segment's address and add up to its size; the segment's
/// totals agree with its blocks; segments do not overlap.
void check_coverage(const snapshot& s) {
  std::uint64_t previous_end = 0;
  for (const segment_info& seg : s.segments) {
    CHECK(seg.address >= previous_end);
    previous_end = seg.address + seg.total_size;
    std::uint64_t at = seg.address, allocated = 0, requested = 0;
    REQUIRE(!seg.blocks.empty());
    for (const block_info& b : seg.blocks) {
      CHECK(b.address == at);
      at += b.size;
      if (b.state == "active_allocated") {
        allocated += b.size;
        requested += b.requested_size;
        CHECK(b.requested_size <= b.size);
      } else {
        CHECK(b.state == "inactive");
        CHECK(b.requested_size == 0);
      }
    }
    CHECK(at == seg.address + seg.total_size);
    CHECK(seg.allocated_size == allocated);
    CHECK(seg.active_size == allocated);
    CHECK(seg.requested_size == requested);
  }
}

struct expected_entry {
  std::string action;
  std::uint64_t address, size;
};

void check_trace(const std::vector<trace_entry>& trace, const std::vector<expected_entry>& want) {
  REQUIRE(trace.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("entry " << i << ": " << trace[i].action);
    CHECK(trace[i].action == want[i].action);
    CHECK(trace[i].address == want[i].address);
    CHECK(trace[i].size == want[i].size);
    if (i > 0) CHECK(trace[i].sequence > trace[i - 1].sequence);
  }
}

}  // namespace

TEST_CASE("caching allocator snapshot: segments, blocks, states and trace", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  a->record_history(true);

  void* pa = a->allocate(1000, 0);   // small: a 2 MiB segment, block 1024
  void* pb = a->allocate(4_MiB, 0);  // large: a 20 MiB segment, block 4 MiB
  snapshot s = a->take_snapshot();
  check_coverage(s);
  REQUIRE(s.segments.size() == 2);
  const segment_info& small = addr(pa) < addr(pb) ? s.segments[0] : s.segments[1];
  const segment_info& large = addr(pa) < addr(pb) ? s.segments[1] : s.segments[0];
  CHECK(small.segment_type == "small");
  CHECK(small.total_size == 2_MiB);
  CHECK_FALSE(small.expandable);
  REQUIRE(small.blocks.size() == 2);
  CHECK(small.blocks[0].address == addr(pa));
  CHECK(small.blocks[0].size == 1024);
  CHECK(small.blocks[0].requested_size == 1000);
  CHECK(small.blocks[0].state == "active_allocated");
  CHECK(small.blocks[1].size == 2_MiB - 1024);
  CHECK(small.blocks[1].state == "inactive");
  CHECK(large.segment_type == "large");
  CHECK(large.total_size == 20_MiB);
  REQUIRE(large.blocks.size() == 2);
  CHECK(large.blocks[0].state == "active_allocated");
  CHECK(large.blocks[1].size == 16_MiB);

  a->deallocate(pa);  // the small segment merges back into one free block
  s = a->take_snapshot();
  check_coverage(s);
  REQUIRE(s.segments.size() == 2);
  const segment_info& freed = addr(pa) < addr(pb) ? s.segments[0] : s.segments[1];
  REQUIRE(freed.blocks.size() == 1);
  CHECK(freed.blocks[0].state == "inactive");
  CHECK(freed.allocated_size == 0);

  a->empty_cache();  // frees the small segment only
  s = a->take_snapshot();
  check_coverage(s);
  REQUIRE(s.segments.size() == 1);
  CHECK(s.segments[0].address == addr(pb));

  check_trace(s.trace, {{"segment_alloc", addr(pa), 2_MiB},
                        {"alloc", addr(pa), 1000},
                        {"segment_alloc", addr(pb), 20_MiB},
                        {"alloc", addr(pb), 4_MiB},
                        {"free_requested", addr(pa), 1000},
                        {"free_completed", addr(pa), 1000},
                        {"empty_cache", 0, 0},
                        {"segment_free", addr(pa), 2_MiB}});
  a->deallocate(pb);
}

TEST_CASE("the trace is bounded, drops the oldest, and stops when history is off", "[alloc]") {
  auto up = make_arena_upstream(64_MiB);
  auto a = make_caching_allocator(*up, config{});
  void* before = a->allocate(512, 0);  // not recorded: history is off
  CHECK(a->take_snapshot().trace.empty());

  a->record_history(true, 3);
  void* p = a->allocate(512, 0);  // alloc (the segment exists already)
  a->deallocate(p);               // free_requested, free_completed
  void* q = a->allocate(512, 0);  // alloc: the first entry drops out
  const auto trace = a->take_snapshot().trace;
  REQUIRE(trace.size() == 3);
  CHECK(trace[0].action == "free_requested");
  CHECK(trace[1].action == "free_completed");
  CHECK(trace[2].action == "alloc");
  CHECK(trace[2].address == addr(q));
  CHECK(trace[0].sequence < trace[1].sequence);
  CHECK(trace[1].sequence < trace[2].sequence);

  a->record_history(true, 2);  // on again, smaller: the newest two stay
  const auto kept = a->take_snapshot().trace;
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].action == "free_completed");
  CHECK(kept[1].action == "alloc");

  a->record_history(false);
  a->deallocate(q);
  CHECK(a->take_snapshot().trace.empty());
  a->deallocate(before);
}

TEST_CASE("raw allocator snapshot: one segment per live allocation", "[alloc]") {
  auto up = make_arena_upstream(256_MiB);
  auto a = make_raw_allocator(*up);
  a->record_history(true);
  void* p = a->allocate(1000, 0);
  void* q = a->allocate(3_MiB, 2);
  snapshot s = a->take_snapshot();
  check_coverage(s);
  REQUIRE(s.segments.size() == 2);
  CHECK(s.segments[0].address < s.segments[1].address);
  for (const segment_info& seg : s.segments) {
    REQUIRE(seg.blocks.size() == 1);
    CHECK(seg.blocks[0].state == "active_allocated");
  }
  const memory_stats st = a->stats();
  CHECK(st.allocated_bytes.all.current == 1024 + 3 * (1 << 20));
  CHECK(st.reserved_bytes.all.current == st.allocated_bytes.all.current);
  CHECK(st.segment.small_pool.current == 1);
  CHECK(st.segment.large_pool.current == 1);
  CHECK(st.num_device_alloc == 2);
  a->deallocate(p);
  a->deallocate(q);
  CHECK(a->stats().num_device_free == 2);
  check_trace(a->take_snapshot().trace, {{"segment_alloc", addr(p), 1024},
                                         {"alloc", addr(p), 1000},
                                         {"segment_alloc", addr(q), 3_MiB},
                                         {"alloc", addr(q), 3_MiB},
                                         {"free_requested", addr(p), 1000},
                                         {"free_completed", addr(p), 1000},
                                         {"segment_free", addr(p), 1024},
                                         {"free_requested", addr(q), 3_MiB},
                                         {"free_completed", addr(q), 3_MiB},
                                         {"segment_free", addr(q), 3_MiB}});
  CHECK(a->take_snapshot().segments.empty());
}
