// The caching allocator's policy, rule by rule, with figures worked out by hand from PyTorch's
// CUDACachingAllocator.cpp (sizes round to 512 B; <= 1 MiB small pool in 2 MiB segments; large
// requests < 10 MiB get 20 MiB segments, larger ones their size rounded to 2 MiB).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "alloc_support.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;
using pinbench::testing::addr;
using pinbench::testing::MiB;

namespace {

config with_max_split(std::size_t bytes) {
  config c;
  c.max_split_size_bytes = bytes;
  return c;
}

}  // namespace

TEST_CASE("segment size of a first allocation", "[alloc]") {
  struct row {
    std::size_t request;
    std::int64_t segment, block;
    bool small;
  };
  // block: the block handed out. 11 MiB gets a 12 MiB segment whose 1 MiB remainder is not
  // split off (a large-pool remainder must be > 1 MiB), so the block is the whole 12 MiB.
  const row r = GENERATE(values<row>({{1, 2 * MiB, 512, true},
                                      {1_MiB, 2 * MiB, 1 * MiB, true},
                                      {1_MiB + 1, 20 * MiB, 1 * MiB + 512, false},
                                      {9_MiB, 20 * MiB, 9 * MiB, false},
                                      {10_MiB, 10 * MiB, 10 * MiB, false},
                                      {11_MiB, 12 * MiB, 12 * MiB, false}}));
  INFO("request " << r.request);
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  void* p = a->allocate(r.request, 0);
  const memory_stats st = a->stats();
  CHECK(st.reserved_bytes.all.current == r.segment);
  CHECK((r.small ? st.reserved_bytes.small_pool : st.reserved_bytes.large_pool).current ==
        r.segment);
  CHECK(st.allocated_bytes.all.current == r.block);
  CHECK(st.requested_bytes.all.current == static_cast<std::int64_t>(r.request));
  CHECK(st.segment.all.current == 1);
  CHECK(st.num_device_alloc == 1);
  CHECK(up->used() == static_cast<std::size_t>(r.segment));
  a->deallocate(p);
}

TEST_CASE("splitting: allocations share a segment", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});

  SECTION("two 1 MiB+1 requests (1 MiB + 512 each) share one 20 MiB segment") {
    void* p = a->allocate(1_MiB + 1, 0);
    void* q = a->allocate(1_MiB + 1, 0);
    CHECK(addr(q) == addr(p) + 1_MiB + 512);
    const memory_stats st = a->stats();
    CHECK(st.reserved_bytes.all.current == 20 * MiB);
    CHECK(st.segment.large_pool.current == 1);
    CHECK(st.num_device_alloc == 1);
    // the free tail: 20 MiB - 2 x (1 MiB + 512) = 18873344
    CHECK(st.inactive_split_bytes.large_pool.current == 18873344);
    CHECK(st.inactive_split.large_pool.current == 1);
    a->deallocate(p);
    a->deallocate(q);
    CHECK(a->stats().inactive_split_bytes.all.current == 0);  // all merged back: unsplit
  }

  SECTION("small requests pack into 2 MiB segments") {
    // 600 KiB = 614400 B; three fit in 2 MiB (1843200 B), leaving 253952 B: too small for a
    // fourth, which opens a second segment.
    std::vector<void*> p;
    for (int i = 0; i < 4; ++i) p.push_back(a->allocate(600_KiB, 0));
    CHECK(addr(p[1]) == addr(p[0]) + 614400);
    CHECK(addr(p[2]) == addr(p[1]) + 614400);
    const memory_stats st = a->stats();
    CHECK(st.reserved_bytes.small_pool.current == 4 * MiB);
    CHECK(st.segment.small_pool.current == 2);
    CHECK(st.reserved_bytes.large_pool.current == 0);
    // free tails: 253952 + (2097152 - 614400) = 1736704, in two blocks
    CHECK(st.inactive_split_bytes.small_pool.current == 1736704);
    CHECK(st.inactive_split.small_pool.current == 2);
    for (void* x : p) a->deallocate(x);
  }
}

TEST_CASE("merging: freed neighbours merge and serve a larger request", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  // One 20 MiB segment: a [4 MiB] b [4 MiB] c [12 MiB] (11 MiB asked; the 1 MiB left over is
  // not split off, so c's block is 12 MiB).
  void* pa = a->allocate(4_MiB, 0);
  void* pb = a->allocate(4_MiB, 0);
  void* pc = a->allocate(11_MiB, 0);
  CHECK(addr(pb) == addr(pa) + 4_MiB);
  CHECK(addr(pc) == addr(pa) + 8_MiB);
  memory_stats st = a->stats();
  CHECK(st.num_device_alloc == 1);
  CHECK(st.allocated_bytes.all.current == 20 * MiB);
  CHECK(st.requested_bytes.all.current == 19 * MiB);
  CHECK(st.inactive_split_bytes.all.current == 0);

  a->deallocate(pa);
  st = a->stats();
  CHECK(st.inactive_split.all.current == 1);
  CHECK(st.inactive_split_bytes.all.current == 4 * MiB);
  a->deallocate(pb);  // merges with a: still one inactive split block, now 8 MiB
  st = a->stats();
  CHECK(st.inactive_split.all.current == 1);
  CHECK(st.inactive_split_bytes.all.current == 8 * MiB);

  void* pd = a->allocate(8_MiB, 0);  // fits only the merged block
  CHECK(pd == pa);
  st = a->stats();
  CHECK(st.num_device_alloc == 1);
  CHECK(st.inactive_split_bytes.all.current == 0);

  a->deallocate(pc);
  a->deallocate(pd);
  void* pe = a->allocate(20_MiB, 0);  // the whole segment, merged back together
  CHECK(pe == pa);
  CHECK(a->stats().num_device_alloc == 1);
  a->deallocate(pe);
}

TEST_CASE("best fit picks the smallest cached block that fits", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  void* p30 = a->allocate(30_MiB, 0);
  void* p12 = a->allocate(12_MiB, 0);
  void* p16 = a->allocate(16_MiB, 0);
  a->deallocate(p30);
  a->deallocate(p12);
  a->deallocate(p16);

  void* x = a->allocate(11_MiB, 0);  // 12 MiB is the smallest >= 11 MiB
  CHECK(x == p12);
  void* y = a->allocate(13_MiB, 0);  // 16 MiB next; split, a 3 MiB remainder stays cached
  CHECK(y == p16);
  const memory_stats st = a->stats();
  CHECK(st.num_device_alloc == 3);
  CHECK(st.allocated_bytes.all.current == 12 * MiB + 13 * MiB);
  CHECK(st.inactive_split_bytes.all.current == 3 * MiB);
  void* z = a->allocate(2_MiB + 1, 0);  // the 3 MiB remainder beats the 30 MiB block
  CHECK(addr(z) == addr(p16) + 13_MiB);
  a->deallocate(x);
  a->deallocate(y);
  a->deallocate(z);
}

TEST_CASE("a cached block is never handed to another stream", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  void* p = a->allocate(4_MiB, 0);
  a->deallocate(p);
  void* q = a->allocate(4_MiB, 1);  // stream 1 has nothing cached: a new 20 MiB segment
  CHECK((addr(q) < addr(p) || addr(q) >= addr(p) + 20_MiB));
  CHECK(a->stats().num_device_alloc == 2);
  CHECK(a->stats().reserved_bytes.all.current == 40 * MiB);
  a->deallocate(q);
  CHECK(a->allocate(4_MiB, 0) == p);
  CHECK(a->allocate(4_MiB, 1) == q);
  CHECK(a->stats().num_device_alloc == 2);
}

TEST_CASE("max_split_size: oversize blocks are not split, reused within 20 MiB", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, with_max_split(64_MiB));

  void* p100 = a->allocate(100_MiB, 0);
  memory_stats st = a->stats();
  CHECK(st.oversize_segments.current == 1);
  CHECK(st.oversize_allocations.current == 1);
  a->deallocate(p100);
  CHECK(a->stats().oversize_allocations.current == 0);

  // 90 MiB: the cached 100 MiB block is < 90 + 20 MiB, so it is taken whole (not split).
  void* p90 = a->allocate(90_MiB, 0);
  CHECK(p90 == p100);
  st = a->stats();
  CHECK(st.allocated_bytes.all.current == 100 * MiB);
  CHECK(st.inactive_split_bytes.all.current == 0);
  CHECK(st.num_device_alloc == 1);
  a->deallocate(p90);

  // 70 MiB: 100 MiB >= 70 + 20 MiB wastes too much: a new 70 MiB segment.
  void* p70 = a->allocate(70_MiB, 0);
  CHECK(p70 != p100);
  CHECK(a->stats().num_device_alloc == 2);
  CHECK(a->stats().oversize_segments.current == 2);
  a->deallocate(p70);

  // 30 MiB is below max_split_size: no oversize block for it, even though 70 MiB is cached.
  void* p30 = a->allocate(30_MiB, 0);
  CHECK(p30 != p70);
  CHECK(p30 != p100);
  CHECK(a->stats().num_device_alloc == 3);

  // 65 MiB: the cached 70 MiB block (< 85 MiB) is the best fit.
  void* p65 = a->allocate(65_MiB, 0);
  CHECK(p65 == p70);
  st = a->stats();
  CHECK(st.num_device_alloc == 3);
  CHECK(st.allocated_bytes.all.current == 30 * MiB + 70 * MiB);
  CHECK(st.oversize_allocations.current == 1);
  a->deallocate(p30);
  a->deallocate(p65);
}

TEST_CASE("out-of-memory path: oversize release, then release all, then OOM", "[alloc]") {
  SECTION("one oversize block covering the request is released first; then everything") {
    auto up = make_arena_upstream(180_MiB);
    auto a = make_caching_allocator(*up, with_max_split(64_MiB));
    a->deallocate(a->allocate(100_MiB, 0));  // cached: a 100 MiB oversize segment
    a->deallocate(a->allocate(4_MiB, 0));    // cached: a 20 MiB segment
    CHECK(a->stats().reserved_bytes.all.current == 120 * MiB);

    // 70 MiB: the 100 MiB block is >= 70 + 20 MiB (unusable); 120 + 70 > 180 fails; the
    // smallest oversize block >= 70 MiB (100 MiB) is freed and the allocation succeeds.
    void* z = a->allocate(70_MiB, 0);
    memory_stats st = a->stats();
    CHECK(st.num_device_free == 1);
    CHECK(st.num_alloc_retries == 0);
    CHECK(st.num_sync_all_streams == 0);
    CHECK(st.reserved_bytes.all.current == 90 * MiB);  // 20 cached + 70 live

    // 100 MiB: 90 + 100 > 180; no oversize block is cached; release all (the 20 MiB
    // segment), counted as a retry after synchronising: 70 + 100 = 170 fits.
    void* w = a->allocate(100_MiB, 0);
    st = a->stats();
    CHECK(st.num_device_free == 2);
    CHECK(st.num_alloc_retries == 1);
    CHECK(st.num_sync_all_streams == 1);
    CHECK(st.reserved_bytes.all.current == 170 * MiB);

    // 50 MiB: nothing cached, 170 + 50 > 180: out of memory after one more retry.
    a->record_history(true);
    try {
      (void)a->allocate(50_MiB, 0);
      FAIL("no oom_error");
    } catch (const oom_error& e) {
      // PyTorch 2.6's text word for word, "GPU 0" replaced by the device used.
      CHECK(std::string(e.what()) ==
            "CUDA out of memory. Tried to allocate 50.00 MiB. Host-emulated device has a total "
            "capacity of 180.00 MiB of which 10.00 MiB is free. Of the allocated memory 170.00 "
            "MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If "
            "reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
      CHECK(e.requested() == 50_MiB);
      CHECK(e.allocated() == 170_MiB);
      CHECK(e.reserved() == 170_MiB);
      CHECK(e.free_bytes() == 10_MiB);
    }
    st = a->stats();
    CHECK(st.num_ooms == 1);
    CHECK(st.num_alloc_retries == 2);
    CHECK(st.num_sync_all_streams == 2);
    const auto trace = a->take_snapshot().trace;
    REQUIRE(!trace.empty());
    CHECK(trace.back().action == "oom");
    CHECK(trace.back().address == 10_MiB);  // PyTorch puts the device's free bytes there
    CHECK(trace.back().size == 50_MiB);

    // Still works: freeing z leaves a cached 70 MiB oversize block, which a 50 MiB request
    // may not take but the oversize release frees.
    a->deallocate(z);
    void* v = a->allocate(50_MiB, 0);
    CHECK(v != nullptr);
    st = a->stats();
    CHECK(st.num_device_free == 3);
    CHECK(st.reserved_bytes.all.current == 150 * MiB);
    a->deallocate(v);
    a->deallocate(w);
  }

  SECTION("without one large enough, the largest oversize blocks go until enough is freed") {
    auto up = make_arena_upstream(300_MiB);
    auto a = make_caching_allocator(*up, with_max_split(64_MiB));
    void* p66 = a->allocate(66_MiB, 0);
    void* p70 = a->allocate(70_MiB, 0);
    void* p80 = a->allocate(80_MiB, 0);
    a->deallocate(p66);
    a->deallocate(p70);
    a->deallocate(p80);
    // 150 MiB: 216 + 150 > 300. No cached block >= 150 MiB: free 80, then 70 (150 freed,
    // enough); 66 MiB stays cached. 66 + 150 = 216 fits without a retry.
    void* big = a->allocate(150_MiB, 0);
    const memory_stats st = a->stats();
    CHECK(st.num_device_free == 2);
    CHECK(st.num_alloc_retries == 0);
    CHECK(st.num_sync_all_streams == 0);
    CHECK(st.reserved_bytes.all.current == 216 * MiB);
    CHECK(a->allocate(66_MiB, 0) == p66);
    a->deallocate(big);
  }

  SECTION("with a memory fraction the message says what is allowed") {
    auto up = make_arena_upstream(100_MiB);
    auto a = make_caching_allocator(*up, config{}, 0.5);
    void* p = a->allocate(40_MiB, 0);
    CHECK_THROWS_WITH((void)a->allocate(20_MiB, 0),
                      Catch::Contains("is free. 50.00 MiB allowed; Of the allocated memory"));
    a->deallocate(p);
  }
}

TEST_CASE("empty_cache frees only segments without live blocks", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, config{});
  void* pa = a->allocate(1_KiB, 0);  // small segment (2 MiB), shared with b
  void* pb = a->allocate(1_KiB, 0);
  void* pc = a->allocate(4_MiB, 0);   // 20 MiB segment, 16 MiB of it cached
  void* pd = a->allocate(30_MiB, 0);  // too big for that remainder: a 30 MiB segment
  CHECK(addr(pb) == addr(pa) + 1024);
  CHECK(a->stats().reserved_bytes.all.current == 52 * MiB);

  a->deallocate(pb);
  a->deallocate(pd);
  a->empty_cache();  // only d's segment is free of live blocks
  memory_stats st = a->stats();
  CHECK(st.reserved_bytes.all.current == 22 * MiB);
  CHECK(st.num_device_free == 1);
  CHECK(st.num_sync_all_streams == 1);
  CHECK(up->used() == 22_MiB);

  a->deallocate(pc);
  a->empty_cache();
  CHECK(a->stats().reserved_bytes.all.current == 2 * MiB);
  a->deallocate(pa);
  a->empty_cache();
  st = a->stats();
  CHECK(st.reserved_bytes.all.current == 0);
  CHECK(st.num_device_free == 3);
  CHECK(st.num_sync_all_streams == 3);
  CHECK(up->used() == 0);
}

TEST_CASE("roundup_power2_divisions:4 rounds to quarter steps of the power-of-two interval",
          "[alloc]") {
  struct row {
    std::size_t request;
    std::int64_t rounded;
  };
  const row r = GENERATE(values<row>({
      {5_MiB + 1, 6 * MiB},               // [4, 8) MiB in 1 MiB steps
      {1200_MiB, 1280 * MiB},             // [1024, 2048) MiB in 256 MiB steps
      {1_MiB + 1, 1 * MiB + 256 * 1024},  // [1, 2) MiB in 256 KiB steps
      {4_MiB, 4 * MiB},                   // a power of two stays
      {2049, 2560},                       // [2048, 4096) in 512 B steps
      {1500, 1536},                       // <= 512 x 4: plain 512 B rounding
  }));
  INFO("request " << r.request);
  auto up = make_arena_upstream(2_GiB);
  config conf;
  std::fill(conf.roundup_power2_divisions.begin(), conf.roundup_power2_divisions.end(), 4);
  auto a = make_caching_allocator(*up, conf);
  void* p = a->allocate(r.request, 0);
  CHECK(a->stats().allocated_bytes.all.current == r.rounded);
  a->deallocate(p);
}

TEST_CASE("garbage collection frees old cached blocks above the threshold", "[alloc]") {
  // Capacity 100 MiB x fraction 0.8 = 80 MiB allowed; threshold 0.6 -> collect above 48 MiB.
  auto up = make_arena_upstream(100_MiB);
  config conf;
  conf.garbage_collection_threshold = 0.6;
  const bool gc = GENERATE(true, false);
  if (!gc) conf.garbage_collection_threshold = 0;
  auto a = make_caching_allocator(*up, conf, 0.8);

  // Large-pool get_free_block calls age the cached blocks: A and B ask (calls 1, 2), A is freed
  // (age base 2), X on stream 1 asks (call 3) and gets its own 20 MiB segment, B is freed
  // (base 3). Reserved: 60 MiB.
  void* pa = a->allocate(20_MiB, 0);
  void* pb = a->allocate(20_MiB, 0);
  a->deallocate(pa);
  void* px = a->allocate(6_MiB, 1);
  a->deallocate(pb);
  CHECK(a->stats().reserved_bytes.all.current == 60 * MiB);

  // C (25 MiB, call 4) finds no block. With gc: 60 > 48, target 12 MiB; ages A 2, B 1 (X's
  // segment is split, not freeable); average 1.5: A alone is freed (20 >= 12, done); 40 + 26
  // (C's segment) fits in 80. Without: 60 + 26 > 80 fails, release all frees A and B, retry.
  void* pc = a->allocate(25_MiB, 0);
  const memory_stats st = a->stats();
  if (gc) {
    CHECK(st.num_device_free == 1);
    CHECK(st.num_alloc_retries == 0);
    CHECK(st.num_sync_all_streams == 0);
    CHECK(st.reserved_bytes.all.current == 66 * MiB);
    CHECK(a->allocate(20_MiB, 0) == pb);  // B was young enough to stay cached
    CHECK(a->stats().num_device_alloc == 4);
  } else {
    CHECK(st.num_device_free == 2);
    CHECK(st.num_alloc_retries == 1);
    CHECK(st.num_sync_all_streams == 1);
    CHECK(st.reserved_bytes.all.current == 46 * MiB);
  }
  a->deallocate(pc);
  a->deallocate(px);
}

TEST_CASE("expandable segments map pages as they grow and unmap free pages", "[alloc]") {
  auto up = make_arena_upstream(1_GiB);
  config conf;
  conf.expandable_segments = true;
  auto a = make_caching_allocator(*up, conf);
  a->record_history(true);

  // 30 MiB: the segment's first two 20 MiB pages are mapped: reserved 40 MiB.
  void* pa = a->allocate(30_MiB, 0);
  memory_stats st = a->stats();
  CHECK(st.reserved_bytes.large_pool.current == 40 * MiB);
  CHECK(st.num_device_alloc == 1);
  CHECK(st.segment.all.current == 0);  // PyTorch counts no segment for expandable mappings
  CHECK(up->used() == 40_MiB);

  // 5 MiB fits the mapped 10 MiB tail; 10 MiB then needs the 5 MiB left plus one more page.
  void* pb = a->allocate(5_MiB, 0);
  CHECK(addr(pb) == addr(pa) + 30_MiB);
  CHECK(a->stats().num_device_alloc == 1);
  void* pc = a->allocate(10_MiB, 0);
  CHECK(addr(pc) == addr(pa) + 35_MiB);
  st = a->stats();
  CHECK(st.reserved_bytes.all.current == 60 * MiB);
  CHECK(st.num_device_alloc == 2);
  CHECK(st.inactive_split_bytes.all.current == 0);  // not tracked for expandable segments

  snapshot snap = a->take_snapshot();
  REQUIRE(snap.segments.size() == 1);
  CHECK(snap.segments[0].expandable);
  CHECK(snap.segments[0].address == addr(pa));
  CHECK(snap.segments[0].total_size == 60_MiB);
  REQUIRE(snap.segments[0].blocks.size() == 4);
  CHECK(snap.segments[0].blocks[3].size == 15_MiB);
  CHECK(snap.segments[0].blocks[3].state == "inactive");

  // Free b and c: [30, 60) MiB is free; only the page [40, 60) lies wholly inside it.
  a->deallocate(pb);
  a->deallocate(pc);
  a->empty_cache();
  st = a->stats();
  CHECK(st.reserved_bytes.all.current == 40 * MiB);
  CHECK(st.num_device_free == 1);
  CHECK(up->used() == 40_MiB);
  snap = a->take_snapshot();
  REQUIRE(!snap.trace.empty());
  CHECK(snap.trace.back().action == "segment_unmap");
  CHECK(snap.trace.back().address == addr(pa) + 40_MiB);
  CHECK(snap.trace.back().size == 20_MiB);

  // Free a: everything is unmapped and the address range goes back.
  a->deallocate(pa);
  a->empty_cache();
  st = a->stats();
  CHECK(st.reserved_bytes.all.current == 0);
  CHECK(st.num_device_free == 2);
  CHECK(up->used() == 0);
  CHECK(a->take_snapshot().segments.empty());

  // The small pool maps 2 MiB pages.
  void* ps = a->allocate(1000, 0);
  CHECK(a->stats().reserved_bytes.small_pool.current == 2 * MiB);
  a->deallocate(ps);
}

TEST_CASE("expandable segments: a failed mapping is an OOM, and release unmaps to retry",
          "[alloc]") {
  auto up = make_arena_upstream(100_MiB);
  config conf;
  conf.expandable_segments = true;
  auto a = make_caching_allocator(*up, conf);
  // 3 x 20 MiB pages mapped for 50 MiB on stream 0; stream 1 then needs 40 MiB: 60 + 40 fits.
  void* p0 = a->allocate(50_MiB, 0);
  void* p1 = a->allocate(40_MiB, 1);
  CHECK(a->stats().reserved_bytes.all.current == 100 * MiB);
  a->deallocate(p0);
  // Stream 1 wants 40 MiB more: no page left until release_cached_blocks unmaps stream 0's.
  void* p2 = a->allocate(40_MiB, 1);
  memory_stats st = a->stats();
  CHECK(st.num_alloc_retries == 1);
  CHECK(st.num_sync_all_streams == 1);
  CHECK(st.reserved_bytes.all.current == 80 * MiB);
  CHECK_THROWS_AS((void)a->allocate(40_MiB, 1), oom_error);
  CHECK(a->stats().num_ooms == 1);
  a->deallocate(p1);
  a->deallocate(p2);
}
