// The caching allocator at the edges, as PyTorch 2.6.0 handles them (config::release 2.6):
// figures worked out from that release's CUDACachingAllocator.cpp, CUDAAllocatorConfig.cpp and
// torch/cuda/memory.py, and from its own test_cuda.py where it has one. The edges that other
// releases decide otherwise are in pytorch_releases_test.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/pytorch_version.hpp"
#include "alloc/upstream.hpp"
#include "alloc_support.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;
using pinbench::testing::MiB;

namespace {

// The tail every 2.6 OOM message ends with (two double spaces are PyTorch's).
const std::string hint =
    " If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

// The release this file's edges are worked out for.
config release_2_6() {
  config c;
  c.release = {2, 6};
  return c;
}

std::string oom_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const oom_error& e) {
    return e.what();
  }
  return "no oom_error";
}

}  // namespace

TEST_CASE("the allocator follows a named PyTorch release", "[alloc][pytorch]") {
  CHECK(config{}.release == pytorch_release::newest());
  CHECK(pytorch_release::newest().to_string() == "2.10");
  CHECK(pytorch_release_choices(pytorch_release{2, 6}).size() >= 4);
}

TEST_CASE("PyTorch 2.6: a request of 1 EiB or more is refused before malloc, counting nothing",
          "[alloc][pytorch]") {
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, release_2_6());
  // NativeCachingAllocator::allocate checks size < 2^60 first: before rounding, before stats.
  CHECK(oom_text([&] { (void)a->allocate(std::size_t{1} << 60, 0); }) ==
        "CUDA out of memory. Tried to allocate more than 1EB memory.");
  memory_stats st = a->stats();
  CHECK(st.num_ooms == 0);
  CHECK(st.num_alloc_retries == 0);
  CHECK(st.num_device_alloc == 0);
  CHECK(st.reserved_bytes.all.current == 0);

  // One byte less goes the normal way: test_cuda.py's own example, 800000000 GiB (below 2^60),
  // is a large-pool request rounded to 2 MiB and reported as the segment size.
  const std::size_t huge = std::size_t{1024} * 1024 * 1024 * 800000000;
  CHECK(oom_text([&] { (void)a->allocate(huge, 0); }) ==
        "CUDA out of memory. Tried to allocate 800000000.00 GiB. Host-emulated device has a total "
        "capacity of 1024.00 MiB of which 1024.00 MiB is free. Of the allocated memory 0 bytes is "
        "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated." +
            hint);
  st = a->stats();
  CHECK(st.num_ooms == 1);
  CHECK(st.num_alloc_retries == 1);  // release_cached_blocks, then alloc_block(isRetry)

  // The raw allocator refuses the same way: PyTorch checks before its uncached path.
  auto raw = make_raw_allocator(*up);
  CHECK(oom_text([&] { (void)raw->allocate(std::size_t{1} << 61, 0); }) ==
        "CUDA out of memory. Tried to allocate more than 1EB memory.");
  CHECK(raw->stats().num_ooms == 0);
}

TEST_CASE("PyTorch 2.6: a memory fraction given is set_per_process_memory_fraction called",
          "[alloc][pytorch]") {
  SECTION("1.0 given adds \"allowed\" to the message; left out, it does not") {
    // 100 MiB device; 60 MiB live, then 50 MiB: a 50 MiB segment, 60 + 50 > 100.
    auto up = make_arena_upstream(100_MiB);
    const bool given = GENERATE(true, false);
    auto a = make_caching_allocator(*up, release_2_6(),
                                    given ? std::optional<double>(1.0) : std::nullopt);
    void* p = a->allocate(60_MiB, 0);
    const std::string allowed = given ? "100.00 MiB allowed; " : "";
    CHECK(oom_text([&] { (void)a->allocate(50_MiB, 0); }) ==
          "CUDA out of memory. Tried to allocate 50.00 MiB. Host-emulated device has a total "
          "capacity of 100.00 MiB of which 40.00 MiB is free. " +
              allowed +
              "Of the allocated memory 60.00 MiB is allocated by PyTorch, and 0 bytes is "
              "reserved by PyTorch but unallocated." +
              hint);
    a->deallocate(p);
  }

  SECTION("1.0 given arms garbage collection; left out, it stays off") {
    // 80 MiB device. Given 1.0: allowed = size_t(1.0 x 80 MiB) = 80 MiB and, with threshold
    // 0.6, collection above 48 MiB. A and B (20 MiB each) are cached with ages 2 and 1 when C
    // (25 MiB, a 26 MiB segment) finds no block at 60 MiB reserved: A alone is collected
    // (the average age is 1.5), and 40 + 26 fits. Left out: no collection; the device refuses
    // 60 + 26, everything cached is released (a retry) and C fits in 26.
    auto up = make_arena_upstream(80_MiB);
    config conf = release_2_6();
    conf.garbage_collection_threshold = 0.6;
    const bool given = GENERATE(true, false);
    auto a = make_caching_allocator(*up, conf, given ? std::optional<double>(1.0) : std::nullopt);
    void* pa = a->allocate(20_MiB, 0);
    void* pb = a->allocate(20_MiB, 0);
    a->deallocate(pa);
    void* px = a->allocate(6_MiB, 1);
    a->deallocate(pb);
    REQUIRE(a->stats().reserved_bytes.all.current == 60 * MiB);
    void* pc = a->allocate(25_MiB, 0);
    const memory_stats st = a->stats();
    if (given) {
      CHECK(st.num_device_free == 1);
      CHECK(st.num_alloc_retries == 0);
      CHECK(st.reserved_bytes.all.current == 66 * MiB);
    } else {
      CHECK(st.num_device_free == 2);
      CHECK(st.num_alloc_retries == 1);
      CHECK(st.reserved_bytes.all.current == 46 * MiB);
    }
    a->deallocate(pc);
    a->deallocate(px);
  }

  SECTION("0 is accepted: no new segment fits, and the message says 0 bytes allowed") {
    // allowed = 0: alloc_block fails for the first 2 MiB segment; release_cached_blocks has
    // nothing to free and the retry (counted) fails too.
    auto up = make_arena_upstream(100_MiB);
    auto a = make_caching_allocator(*up, release_2_6(), 0.0);
    CHECK(oom_text([&] { (void)a->allocate(1, 0); }) ==
          "CUDA out of memory. Tried to allocate 2.00 MiB. Host-emulated device has a total "
          "capacity of 100.00 MiB of which 100.00 MiB is free. 0 bytes allowed; Of the allocated "
          "memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
          "unallocated." +
              hint);
    const memory_stats st = a->stats();
    CHECK(st.num_ooms == 1);
    CHECK(st.num_alloc_retries == 1);
    CHECK(st.num_device_alloc == 0);
  }

  SECTION("the limit is size_t(fraction x capacity), checked against the segment size") {
    // 0.25 x 100 MiB = 26214400 bytes (25 MiB). Small requests take 2 MiB segments: 12 of
    // them fit (24 MiB); a 1-byte request then needs a 13th, and 24 + 2 > 25.
    auto up = make_arena_upstream(100_MiB);
    auto a = make_caching_allocator(*up, release_2_6(), 0.25);
    std::vector<void*> held;
    for (int i = 0; i < 12; ++i) {
      // Each fills its own small segment: 1 MiB requests, two per 2 MiB segment.
      held.push_back(a->allocate(1_MiB, 0));
      held.push_back(a->allocate(1_MiB, 0));
    }
    CHECK(a->stats().reserved_bytes.all.current == 24 * MiB);
    CHECK_THROWS_AS((void)a->allocate(1, 0), oom_error);
    for (void* p : held) a->deallocate(p);
  }

  SECTION("outside [0, 1] is refused") {
    auto up = make_arena_upstream(100_MiB);
    CHECK_THROWS_AS(make_caching_allocator(*up, release_2_6(), 1.5), input_error);
    CHECK_THROWS_AS(make_caching_allocator(*up, release_2_6(), -0.1), input_error);
  }
}

TEST_CASE("PyTorch 2.6: roundup_power2_divisions:[] is accepted and changes nothing",
          "[alloc][pytorch]") {
  const config empty = parse_config("roundup_power2_divisions:[]", "s.json", "params.config");
  CHECK(empty.roundup_power2_divisions == config{}.roundup_power2_divisions);
  // Same rounding as without it: 1.3 MiB rounds to 512 bytes, not to a division.
  auto up = make_arena_upstream(1_GiB);
  auto a = make_caching_allocator(*up, empty);
  void* p = a->allocate(1331200 + 1, 0);
  CHECK(a->stats().allocated_bytes.all.current == 1331200 + 512);
  a->deallocate(p);
}
