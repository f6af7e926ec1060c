// How much a cache-hit allocate+deallocate pair costs with many live and cached blocks around.
// Reported with WARN, not asserted: the figures vary with the machine; the order of growth
// (about logarithmic in the number of blocks) is what to look at.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "core/clock.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace {

/// ns per allocate+deallocate pair once `live` blocks are live and as many are cached (every
/// other block of 2 x live freed, so the free sets are fragmented).
double pair_ns(device_allocator& a, std::size_t live, std::size_t request) {
  std::vector<void*> blocks;
  blocks.reserve(2 * live);
  for (std::size_t i = 0; i < 2 * live; ++i) blocks.push_back(a.allocate(512 * (1 + i % 64), 0));
  for (std::size_t i = 0; i < blocks.size(); i += 2) a.deallocate(blocks[i]);

  constexpr int warmup = 10000, pairs = 200000;
  for (int i = 0; i < warmup; ++i) a.deallocate(a.allocate(request, 0));
  const std::int64_t start = now_ns();
  for (int i = 0; i < pairs; ++i)
    a.deallocate(a.allocate(request + 512 * static_cast<std::size_t>(i % 4), 0));
  const std::int64_t elapsed = now_ns() - start;

  for (std::size_t i = 1; i < blocks.size(); i += 2) a.deallocate(blocks[i]);
  return static_cast<double>(elapsed) / pairs;
}

}  // namespace

TEST_CASE("hot path: cost of a cache-hit allocate+deallocate pair", "[alloc][timing]") {
  for (std::size_t live : {std::size_t{10}, std::size_t{1000}, std::size_t{100000}}) {
    auto up = make_arena_upstream(8_GiB);
    auto caching = make_caching_allocator(*up, config{});
    const double small_ns = pair_ns(*caching, live, 4_KiB);
    const double large_ns = pair_ns(*caching, live, 3_MiB);
    CHECK(caching->stats().allocated_bytes.all.current == 0);
    WARN("caching, " << live << " live + " << live << " cached blocks: " << small_ns
                     << " ns per 4 KiB pair, " << large_ns << " ns per 3 MiB pair");
  }
  for (std::size_t live : {std::size_t{10}, std::size_t{1000}}) {
    auto up = make_arena_upstream(8_GiB);
    auto raw = make_raw_allocator(*up);
    const double ns = pair_ns(*raw, live, 4_KiB);
    CHECK(up->used() == 0);
    WARN("raw over the arena, " << live << " live blocks: " << ns << " ns per 4 KiB pair");
  }
}
