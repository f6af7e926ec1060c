// The loader's schedule: epoch_batches cuts the (shuffled) sample order into batches, drops the
// partial one with drop_last, shuffles by seed + epoch; max_outstanding and batch_bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "loader/loader.hpp"

using namespace pinbench::loader;

namespace {

loader_spec schedule(std::size_t batch_size, bool shuffle, bool drop_last, std::uint64_t seed = 0) {
  loader_spec spec;
  spec.batch_size = batch_size;
  spec.shuffle = shuffle;
  spec.drop_last = drop_last;
  spec.seed = seed;
  return spec;
}

std::vector<std::size_t> sizes(const std::vector<std::vector<std::uint64_t>>& batches) {
  std::vector<std::size_t> out;
  for (const auto& b : batches) out.push_back(b.size());
  return out;
}

std::vector<std::uint64_t> flatten(const std::vector<std::vector<std::uint64_t>>& batches) {
  std::vector<std::uint64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<std::uint64_t> iota(std::uint64_t n) {
  std::vector<std::uint64_t> out(n);
  std::iota(out.begin(), out.end(), std::uint64_t{0});
  return out;
}

}  // namespace

TEST_CASE("epoch_batches: batch sizes with and without drop_last", "[loader]") {
  using v = std::vector<std::size_t>;
  CHECK(sizes(epoch_batches(10, schedule(3, false, false), 0)) == v{3, 3, 3, 1});
  CHECK(sizes(epoch_batches(10, schedule(3, false, true), 0)) == v{3, 3, 3});
  CHECK(sizes(epoch_batches(9, schedule(3, false, false), 0)) == v{3, 3, 3});
  CHECK(sizes(epoch_batches(9, schedule(3, false, true), 0)) == v{3, 3, 3});
  CHECK(sizes(epoch_batches(2, schedule(3, false, false), 0)) == v{2});
  CHECK(epoch_batches(2, schedule(3, false, true), 0).empty());
  CHECK(epoch_batches(0, schedule(3, false, false), 0).empty());
  CHECK(sizes(epoch_batches(5, schedule(1, true, true), 4)) == v{1, 1, 1, 1, 1});
  CHECK(sizes(epoch_batches(1000, schedule(64, true, false), 1)).size() == 16);
  CHECK(sizes(epoch_batches(1000, schedule(64, true, false), 1)).back() == 1000 - 15 * 64);
}

TEST_CASE("epoch_batches: without shuffle the order is the identity, every epoch", "[loader]") {
  for (const bool drop_last : {false, true}) {
    for (const std::uint64_t epoch : {0u, 1u, 7u}) {
      CAPTURE(drop_last, epoch);
      const auto batches = epoch_batches(103, schedule(10, false, drop_last, 5), epoch);
      CHECK(flatten(batches) == iota(drop_last ? 100 : 103));
    }
  }
}

TEST_CASE("epoch_batches: shuffle is a permutation that depends on seed + epoch", "[loader]") {
  const std::uint64_t n = 1000;
  const auto e0 = flatten(epoch_batches(n, schedule(32, true, false, 11), 0));
  const auto e1 = flatten(epoch_batches(n, schedule(32, true, false, 11), 1));

  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(n));
  sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(n));

  CHECK(e0 != iota(n));
  CHECK(e0 != e1);
  // Deterministic: the same seed and epoch give the same order on every call.
  CHECK(e0 == flatten(epoch_batches(n, schedule(32, true, false, 11), 0)));
  // Another seed, another order.
  CHECK(e0 != flatten(epoch_batches(n, schedule(32, true, false, 12), 0)));
  // "epoch e uses seed + e".
  CHECK(e1 == flatten(epoch_batches(n, schedule(32, true, false, 12), 0)));
  // The batch size only cuts the order, it does not change it.
  CHECK(e0 == flatten(epoch_batches(n, schedule(7, true, false, 11), 0)));
}

TEST_CASE("epoch_batches: shuffle with drop_last keeps distinct samples, full batches only",
          "[loader]") {
  const auto batches = epoch_batches(1000, schedule(64, true, true, 3), 2);
  REQUIRE(batches.size() == 15);
  for (const auto& b : batches) CHECK(b.size() == 64);
  auto all = flatten(batches);
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.back() < 1000);
}

TEST_CASE("max_outstanding is prefetch_factor x num_workers, batch_bytes adds the headers",
          "[loader]") {
  loader_spec spec;
  for (const int workers : {1, 2, 3, 8}) {
    for (const int prefetch : {1, 2, 4}) {
      spec.num_workers = workers;
      spec.prefetch_factor = prefetch;
      CHECK(max_outstanding(spec) == static_cast<std::size_t>(workers * prefetch));
    }
  }
  static_assert(batch_bytes(0, 100) == 0);
  static_assert(batch_bytes(3, 100) == 3 * (16 + 100));
  CHECK(batch_bytes(64, 128 * 1024) == 64 * (sizeof(sample_header) + 128 * 1024));
}
