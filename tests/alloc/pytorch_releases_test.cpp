// What PyTorch releases decide differently (alloc/pytorch_version.hpp), each edge worked out
// from the releases' CUDACachingAllocator.cpp: the same requests under two releases' rules.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

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

namespace releases_test {

config under(pytorch_release r, const std::string& text = "") {
  return parse_config(text, "s.json", "params.config", r);
}

}  // namespace releases_test

using releases_test::under;

TEST_CASE("releases: a release is written major.minor and read back", "[alloc][pytorch]") {
  CHECK(parse_pytorch_release("2.6", {}, {}) == pytorch_release{2, 6});
  CHECK(parse_pytorch_release("2.6.0", {}, {}) == pytorch_release{2, 6});
  CHECK(parse_pytorch_release("2.14", {}, {}).to_string() == "2.14");
  // What torch.__version__ prints.
  CHECK(parse_pytorch_release("2.6.0+cu124", {}, {}) == pytorch_release{2, 6});
  CHECK(parse_pytorch_release("2.10.0a0+git1234", {}, {}) == pytorch_release{2, 10});
  CHECK(parse_pytorch_release("2.5.0rc1", {}, {}) == pytorch_release{2, 5});
  for (const char* bad : {"", "2", "1.13", "3.0", "2.x", "2.06", " 2.6", "2..6", "2.6-1"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_pytorch_release(bad, {}, {}), input_error);
  }
  // Releases after the newest read follow its rules.
  const pytorch_release later{2, 14};
  CHECK(later.fill_above_last());
  CHECK(later.fraction_one_is_unlimited());
  CHECK(releases_of(pytorch_release{2, 6}) == "2.6-2.9");
  CHECK(distinct_rule_sets().size() == 5);
}

TEST_CASE("releases: one roundup division leaves a size unrounded before 2.4", "[alloc][pytorch]") {
  // round_size with 1 division: 2.0-2.3 pass the size to roundup_power2_next_division, which
  // returns it as it is; from 2.4 only divisions above 1 round by powers of two.
  CHECK(caching_block_size(1000 * 1024 + 1, under({2, 3}, "roundup_power2_divisions:1")) ==
        1000 * 1024 + 1);
  CHECK(caching_block_size(1000 * 1024 + 1, under({2, 4}, "roundup_power2_divisions:1")) ==
        1000 * 1024 + 512);
  // Below 512 bytes every release gives 512; with 2 divisions all of them round alike.
  CHECK(caching_block_size(100, under({2, 3}, "roundup_power2_divisions:1")) == 512);
  CHECK(caching_block_size(3 * MiB + 1, under({2, 3}, "roundup_power2_divisions:2")) ==
        caching_block_size(3 * MiB + 1, under({2, 10}, "roundup_power2_divisions:2")));
}

TEST_CASE("releases: from 2.10 a memory fraction of 1.0 limits nothing and arms no collection",
          "[alloc][pytorch]") {
  // pytorch_edges_test's case: 2.6 collects A when C misses; 2.10 with 1.0 does as if no
  // fraction were set (the device refuses, everything cached goes, a retry).
  auto up = make_arena_upstream(80_MiB);
  const bool newer = GENERATE(true, false);
  config conf = under(newer ? pytorch_release{2, 10} : pytorch_release{2, 6},
                      "garbage_collection_threshold:0.6");
  auto a = make_caching_allocator(*up, conf, 1.0);
  void* pa = a->allocate(20_MiB, 0);
  void* pb = a->allocate(20_MiB, 0);
  a->deallocate(pa);
  void* px = a->allocate(6_MiB, 1);
  a->deallocate(pb);
  void* pc = a->allocate(25_MiB, 0);
  const memory_stats st = a->stats();
  CHECK(st.num_alloc_retries == (newer ? 1 : 0));
  CHECK(st.reserved_bytes.all.current == (newer ? 46 : 66) * MiB);
  a->deallocate(pc);
  a->deallocate(px);
  // Below 1.0 the limit holds in 2.10 too, from the config's own option as from the call.
  auto up2 = make_arena_upstream(100_MiB);
  auto b = make_caching_allocator(*up2, under({2, 10}, "per_process_memory_fraction:0.5"));
  void* p = b->allocate(40_MiB, 0);
  try {
    (void)b->allocate(20_MiB, 0);
    FAIL("50 MiB allowed, 40 reserved: 20 more must not fit");
  } catch (const oom_error& e) {
    CHECK(std::string(e.what()).find("50.00 MiB allowed; ") != std::string::npos);
  }
  b->deallocate(p);
}

TEST_CASE("releases: max_non_split_rounding_mb widens what an oversize request may take",
          "[alloc][pytorch]") {
  // max_split_size 64 MiB: a 100 MiB block cached; a 70 MiB request takes it only when it
  // wastes less than the window: 30 MiB is more than the 20 MiB default, less than 40.
  for (const bool widened : {false, true}) {
    INFO(widened);
    auto up = make_arena_upstream(1_GiB);
    auto a = make_caching_allocator(
        *up, under({2, 6}, widened ? "max_split_size_mb:64,max_non_split_rounding_mb:40"
                                   : "max_split_size_mb:64"));
    a->deallocate(a->allocate(100_MiB, 0));
    void* p = a->allocate(70_MiB, 0);
    CHECK(a->stats().num_device_alloc == (widened ? 1 : 2));
    a->deallocate(p);
  }
}
