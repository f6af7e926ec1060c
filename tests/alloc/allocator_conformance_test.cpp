// One conformance suite for every allocator strategy (raw, caching with each option): what any
// cudaMalloc-like allocator must do, whatever its policy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace {

struct strategy {
  std::string label;
  bool raw = false;
  config conf;
  std::optional<double> fraction;  ///< set_per_process_memory_fraction, when called
};

std::vector<strategy> strategies() {
  std::vector<strategy> out;
  out.push_back({"raw", true, {}, std::nullopt});
  out.push_back({"caching default", false, {}, std::nullopt});
  {
    strategy s{"caching max_split_size_mb:64", false, {}, std::nullopt};
    s.conf.max_split_size_bytes = 64_MiB;
    out.push_back(s);
  }
  {
    strategy s{"caching roundup_power2_divisions:4", false, {}, std::nullopt};
    std::fill(s.conf.roundup_power2_divisions.begin(), s.conf.roundup_power2_divisions.end(), 4);
    out.push_back(s);
  }
  {
    strategy s{"caching garbage_collection_threshold:0.6 (fraction 0.8)", false, {}, 0.8};
    s.conf.garbage_collection_threshold = 0.6;
    out.push_back(s);
  }
  {
    strategy s{"caching expandable_segments:True", false, {}, std::nullopt};
    s.conf.expandable_segments = true;
    out.push_back(s);
  }
  return out;
}

std::unique_ptr<device_allocator> make(const strategy& s, upstream& up) {
  return s.raw ? make_raw_allocator(up) : make_caching_allocator(up, s.conf, s.fraction);
}

void check_invariants(const memory_stats& st) {
  auto check_stat = [](const stat& s) {
    CHECK(s.current >= 0);
    CHECK(s.peak >= s.current);
    CHECK(s.allocated - s.freed == s.current);
  };
  for (const stat_array* a :
       {&st.allocation, &st.segment, &st.active, &st.inactive_split, &st.allocated_bytes,
        &st.reserved_bytes, &st.active_bytes, &st.inactive_split_bytes, &st.requested_bytes}) {
    check_stat(a->all);
    check_stat(a->small_pool);
    check_stat(a->large_pool);
    CHECK(a->all.current == a->small_pool.current + a->large_pool.current);
  }
  check_stat(st.oversize_allocations);
  check_stat(st.oversize_segments);
  CHECK(st.allocated_bytes.all.current <= st.reserved_bytes.all.current);
  CHECK(st.requested_bytes.all.current <= st.allocated_bytes.all.current);
  CHECK(st.active_bytes.all.current == st.allocated_bytes.all.current);  // no cross-stream uses
}

const std::vector<std::size_t> conformance_sizes = {0,         1,     511,    512,    513,    1_MiB,
                                                    1_MiB + 1, 9_MiB, 10_MiB, 11_MiB, 100_MiB};

}  // namespace

TEST_CASE("every allocator strategy behaves like cudaMalloc", "[alloc]") {
  const auto all = strategies();
  const strategy s = GENERATE_COPY(from_range(all));
  INFO("strategy: " << s.label);
  auto up = make_arena_upstream(1_GiB);
  auto a = make(s, *up);

  SECTION("live ranges are 512-aligned and never overlap; freeing all leaves nothing allocated") {
    std::vector<std::pair<std::uintptr_t, std::size_t>> live;
    auto allocate_all = [&] {
      for (std::size_t bytes : conformance_sizes) {
        void* p = a->allocate(bytes, 0);
        if (bytes == 0) {
          CHECK(p == nullptr);
          continue;
        }
        REQUIRE(p != nullptr);
        CHECK(reinterpret_cast<std::uintptr_t>(p) % 512 == 0);
        live.emplace_back(reinterpret_cast<std::uintptr_t>(p), bytes);
      }
    };
    allocate_all();
    // Free every other one, then allocate the lot again: the second round reuses the cache.
    std::vector<std::pair<std::uintptr_t, std::size_t>> kept;
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (i % 2 == 0) {
        a->deallocate(reinterpret_cast<void*>(live[i].first));
      } else {
        kept.push_back(live[i]);
      }
    }
    live = kept;
    allocate_all();
    std::vector<void*> ptrs;
    for (const auto& [p, bytes] : live) ptrs.push_back(reinterpret_cast<void*>(p));
    std::sort(live.begin(), live.end());
    for (std::size_t i = 1; i < live.size(); ++i) {
      INFO("range " << i);
      CHECK(live[i - 1].first + live[i - 1].second <= live[i].first);
    }
    const memory_stats during = a->stats();
    check_invariants(during);
    CHECK(during.allocation.all.current == static_cast<std::int64_t>(ptrs.size()));
    std::int64_t requested = 0;
    for (const auto& [p, bytes] : live) requested += static_cast<std::int64_t>(bytes);
    CHECK(during.requested_bytes.all.current == requested);

    for (void* p : ptrs) a->deallocate(p);
    const memory_stats after = a->stats();
    check_invariants(after);
    CHECK(after.allocated_bytes.all.current == 0);
    CHECK(after.allocation.all.current == 0);
    CHECK(after.requested_bytes.all.current == 0);
    CHECK(after.allocated_bytes.all.peak >= requested);

    a->empty_cache();
    CHECK(a->stats().reserved_bytes.all.current == 0);
    CHECK(up->used() == 0);
  }

  SECTION("freeing nullptr is a no-op; an unknown or already freed pointer throws") {
    const memory_stats before = a->stats();
    a->deallocate(nullptr);
    CHECK(a->stats().flatten() == before.flatten());

    void* p = a->allocate(4096, 0);
    auto* inside = static_cast<char*>(p) + 512;  // pointer arithmetic only; never dereferenced
    CHECK_THROWS_AS(a->deallocate(inside), device_error);
    a->deallocate(p);
    CHECK_THROWS_AS(a->deallocate(p), device_error);
    check_invariants(a->stats());
  }

  SECTION("out of memory throws oom_error, counts it, and the allocator still works") {
    void* keep = a->allocate(100_MiB, 0);
    CHECK_THROWS_AS((void)a->allocate(2_GiB, 0), oom_error);
    try {
      (void)a->allocate(2_GiB, 0);
      FAIL("no oom_error");
    } catch (const oom_error& e) {
      CHECK(e.allocated() >= 100_MiB);
      CHECK(e.reserved() >= e.allocated());
      CHECK(e.free_bytes() <= 1_GiB - 100_MiB);
      CHECK_THAT(e.what(), Catch::StartsWith("CUDA out of memory. Tried to allocate 2.00 GiB. "
                                             "Host-emulated device has a total capacity of"));
    }
    CHECK(a->stats().num_ooms == 2);
    // 1 EiB and more: refused before anything, as PyTorch 2.6 does, and not counted.
    CHECK_THROWS_WITH((void)a->allocate(std::size_t{1} << 62, 0),
                      "CUDA out of memory. Tried to allocate more than 1EB memory.");
    CHECK(a->stats().num_ooms == 2);

    void* small = a->allocate(1000, 0);
    void* large = a->allocate(50_MiB, 0);
    CHECK(small != nullptr);
    CHECK(large != nullptr);
    a->deallocate(small);
    a->deallocate(large);
    a->deallocate(keep);
    check_invariants(a->stats());
    CHECK(a->stats().allocated_bytes.all.current == 0);
  }

  SECTION("streams are kept apart and peaks can be reset") {
    void* p0 = a->allocate(3_MiB, 0);
    void* p1 = a->allocate(3_MiB, 1);
    CHECK(p0 != p1);
    a->deallocate(p0);
    a->deallocate(p1);
    memory_stats st = a->stats();
    CHECK(st.allocated_bytes.all.peak > 0);
    a->reset_peak_stats();
    st = a->stats();
    CHECK(st.allocated_bytes.all.peak == 0);
    CHECK(st.reserved_bytes.all.peak == st.reserved_bytes.all.current);
    check_invariants(st);
  }
}

TEST_CASE("memory_stats flatten uses PyTorch's key names", "[alloc]") {
  auto up = make_arena_upstream(256_MiB);
  config conf;
  conf.max_split_size_bytes = 64_MiB;
  auto a = make_caching_allocator(*up, conf);
  void* p = a->allocate(1000, 0);
  auto flat = a->stats().flatten();
  for (const char* key :
       {"allocation.all.current", "allocated_bytes.large_pool.peak", "reserved_bytes.all.freed",
        "inactive_split_bytes.small_pool.current", "requested_bytes.all.allocated",
        "active.small_pool.current", "active_bytes.all.peak", "segment.large_pool.allocated",
        "inactive_split.all.current", "oversize_allocations.current", "oversize_segments.peak",
        "num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
        "num_device_free", "max_split_size"}) {
    INFO(key);
    CHECK(flat.count(key) == 1);
  }
  // 9 arrays x 3 pools x 4 fields + 2 stats x 4 fields + 6 counters
  CHECK(flat.size() == 9 * 3 * 4 + 2 * 4 + 6);
  CHECK(flat["max_split_size"] == 64 * 1024 * 1024);
  CHECK(flat["allocated_bytes.small_pool.current"] == 1024);
  CHECK(flat["requested_bytes.all.current"] == 1000);
  CHECK(flat["reserved_bytes.all.current"] == 2 * 1024 * 1024);
  a->deallocate(p);

  auto unlimited = make_caching_allocator(*up, config{});
  CHECK(unlimited->stats().flatten()["max_split_size"] == -1);
  auto raw = make_raw_allocator(*up);
  CHECK(raw->stats().flatten()["max_split_size"] == -1);
}
