// The loader's pinned pools: the caching host allocator (power-of-two blocks, reuse only after
// the copies that read a block completed, limits) and the ring (slots in turn, an acquire waits
// for the copy that last read its slot). Pending copies are made with a gate on the stream.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "loader/pinned_pool.hpp"
#include "loader_support.hpp"

using namespace pinbench;
using namespace pinbench::loader;
using namespace pinbench::loader::testing;
using namespace std::chrono_literals;

namespace {

bool is_power_of_two(std::size_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

/// A stream whose work is held behind a gate until release(): copies enqueued on it stay
/// pending, as they would behind a long kernel. Releases the gate before the stream goes.
struct held_stream {
  explicit held_stream(device::backend& be)
      : dev(be), s(be.create_stream()), gate(be.launch_gate(*s)), target(be.alloc_device(1_MiB)) {}
  ~held_stream() {
    gate->release();
    dev.synchronize(*s);
  }
  held_stream(const held_stream&) = delete;
  held_stream& operator=(const held_stream&) = delete;

  /// Enqueues an H2D copy out of the lease (pending while the gate holds) and releases the lease
  /// on the stream, as the loader's consumer does.
  void copy_and_release(pinned_pool& pool, const pinned_lease& lease) {
    dev.copy_async(target->data(), lease.data, std::min<std::size_t>(lease.bytes, 1_MiB),
                   device::copy_dir::h2d, *s);
    pool.release(lease, *s);
  }
  void open() {
    gate->release();
    dev.synchronize(*s);
  }

  device::backend& dev;
  std::unique_ptr<device::stream> s;
  std::unique_ptr<device::gate> gate;
  std::unique_ptr<device::device_buffer> target;
};

}  // namespace

TEST_CASE("pinned_limits_hint names RLIMIT_MEMLOCK", "[loader]") {
  CHECK_THAT(pinned_limits_hint(), Catch::Contains("RLIMIT_MEMLOCK"));
}

TEST_CASE("caching host allocator: sizes round up to powers of two", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 0);
  CHECK(pool->name() == "per_batch");
  for (const std::size_t bytes : {std::size_t{3000}, std::size_t{4096}, std::size_t{5000},
                                  std::size_t{65'537}, std::size_t{100'000}}) {
    CAPTURE(bytes);
    const pinned_lease lease = pool->acquire(bytes);
    REQUIRE(lease);
    CHECK(lease.bytes == bytes);
    CHECK(lease.capacity >= bytes);
    CHECK(lease.capacity < 2 * bytes);
    CHECK(is_power_of_two(lease.capacity));
    // The whole capacity is usable memory.
    std::fill(lease.data, lease.data + lease.capacity, std::byte{0x5a});
    pool->discard(lease);
  }
  const pinned_lease a = pool->acquire(5000);
  CHECK(a.capacity == 8192);
  pool->discard(a);
}

TEST_CASE("caching host allocator: discard gives a block back at once, per size class",
          "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 0);
  const pinned_lease first = pool->acquire(3000);
  const auto allocs = pool->stats().host_allocs;
  CHECK(allocs >= 1);
  CHECK(pool->stats().in_use_bytes >= 3000);
  pool->discard(first);
  CHECK(pool->stats().in_use_bytes == 0);

  // Same power-of-two class (4 KiB): the cached block comes back.
  const pinned_lease second = pool->acquire(4000);
  CHECK(second.data == first.data);
  CHECK(second.id == first.id);
  CHECK(pool->stats().reuses == 1);
  CHECK(pool->stats().host_allocs == allocs);

  // Another class while the first is lent: a new block.
  const pinned_lease third = pool->acquire(10'000);
  CHECK(third.data != second.data);
  CHECK(third.id != second.id);
  CHECK(pool->stats().host_allocs == allocs + 1);
  CHECK(pool->stats().blocks == 2);
  pool->discard(second);
  pool->discard(third);
}

TEST_CASE("caching host allocator: a block is not reused while a copy that reads it is pending",
          "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 0);
  held_stream held(*dev);

  const pinned_lease a = pool->acquire(64_KiB);
  held.copy_and_release(*pool, a);
  CHECK(pool->stats().in_use_bytes >= 64_KiB);  // returned, but its copy is still pending

  const pinned_lease b = pool->acquire(64_KiB);
  CHECK(b.data != a.data);
  CHECK(b.id != a.id);
  CHECK(pool->stats().reuses == 0);
  CHECK(pool->stats().host_allocs == 2);
  pool->discard(b);

  held.open();  // the copy completes
  const auto reuses = pool->stats().reuses;
  const pinned_lease c = pool->acquire(64_KiB);
  CHECK((c.data == a.data || c.data == b.data));
  CHECK(pool->stats().reuses == reuses + 1);
  CHECK(pool->stats().host_allocs == 2);
  pool->discard(c);
}

TEST_CASE("caching host allocator: peak reserved bytes and reset_peak", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 0);
  CHECK(pool->stats().reserved_bytes == 0);
  const pinned_lease a = pool->acquire(4096);
  const pinned_lease b = pool->acquire(8192);
  const pinned_stats s = pool->stats();
  CHECK(s.reserved_bytes == 4096 + 8192);
  CHECK(s.peak_reserved_bytes == 4096 + 8192);
  pool->discard(a);
  pool->discard(b);
  // Cached blocks stay reserved.
  CHECK(pool->stats().reserved_bytes == 4096 + 8192);

  pool->reset_peak();
  CHECK(pool->stats().peak_reserved_bytes == pool->stats().reserved_bytes);
  const pinned_lease c = pool->acquire(16384);
  CHECK(pool->stats().peak_reserved_bytes == 4096 + 8192 + 16384);
  pool->discard(c);
}

TEST_CASE("caching host allocator: the limit throws pinned_memory_error with the hint",
          "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 64_KiB);
  const pinned_lease a = pool->acquire(32_KiB);
  REQUIRE(a);
  try {
    (void)pool->acquire(64_KiB);  // 32 KiB held + 64 KiB > 64 KiB
    FAIL("acquire beyond limit_bytes did not throw");
  } catch (const pinned_memory_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("RLIMIT_MEMLOCK"));
  }
  // The failed acquire took nothing: the pool still works within its limit.
  const pinned_lease b = pool->acquire(16_KiB);
  CHECK(b);
  CHECK(pool->stats().reserved_bytes <= 64_KiB);
  pool->discard(a);
  pool->discard(b);
}

TEST_CASE("caching host allocator: the host backend's pinning fallback still lends memory",
          "[loader]") {
  auto dev = host_backend(64_MiB, /*refuse_pinning=*/true);
  auto pool = make_caching_host_allocator(*dev, 0);
  const pinned_lease a = pool->acquire(4096);
  REQUIRE(a);
  CHECK_FALSE(a.page_locked);
  CHECK_FALSE(dev->warnings().empty());
  pool->discard(a);
}

TEST_CASE("caching host allocator: concurrent acquires never share a block", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_caching_host_allocator(*dev, 0);
  constexpr int threads = 4;
  constexpr int rounds = 200;
  std::atomic<int> overlaps{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const auto mark = static_cast<std::byte>(t + 1);
      for (int r = 0; r < rounds; ++r) {
        const std::size_t bytes = std::size_t{1000} << (r % 4);
        const pinned_lease lease = pool->acquire(bytes);
        std::fill(lease.data, lease.data + bytes, mark);
        std::this_thread::yield();
        // Another thread's lease on the same memory would have overwritten the mark.
        if (std::any_of(lease.data, lease.data + bytes, [&](std::byte b) { return b != mark; }))
          overlaps.fetch_add(1);
        pool->discard(lease);
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(overlaps.load() == 0);
  CHECK(pool->stats().in_use_bytes == 0);
  CHECK(pool->stats().reuses > 0);
}

TEST_CASE("pinned ring: slots are preallocated and lent in turn", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_pinned_ring(*dev, 3, 10'000, 0);
  CHECK(pool->name() == "ring");
  const pinned_stats before = pool->stats();
  CHECK(before.blocks == 3);
  CHECK(before.reserved_bytes >= 3 * 10'000);
  CHECK(before.in_use_bytes == 0);

  std::set<std::uint32_t> ids;
  std::set<const std::byte*> addresses;
  for (int i = 0; i < 6; ++i) {
    const pinned_lease lease = pool->acquire(10'000);
    REQUIRE(lease);
    CHECK(lease.bytes == 10'000);
    CHECK(lease.capacity >= 10'000);
    ids.insert(lease.id);
    addresses.insert(lease.data);
    pool->discard(lease);
  }
  CHECK(ids.size() == 3);
  CHECK(addresses.size() == 3);
  CHECK(pool->stats().reserved_bytes == before.reserved_bytes);
  CHECK(pool->stats().peak_reserved_bytes == before.reserved_bytes);
  CHECK(pool->stats().host_allocs == before.host_allocs);

  // Smaller requests fit a slot too.
  const pinned_lease small = pool->acquire(100);
  CHECK(small.bytes == 100);
  CHECK(small.capacity >= 10'000);
  pool->discard(small);
}

TEST_CASE("pinned ring: an acquire waits for the copy that last read its slot", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_pinned_ring(*dev, 1, 64_KiB, 0);
  held_stream held(*dev);

  const pinned_lease first = pool->acquire(64_KiB);
  held.copy_and_release(*pool, first);

  std::atomic<bool> opened{false};
  std::atomic<bool> returned{false};
  std::atomic<bool> returned_before_open{false};
  std::atomic<bool> threw{false};
  pinned_lease second;
  std::thread acquirer([&] {
    try {
      second = pool->acquire(64_KiB);
    } catch (...) {
      threw = true;
    }
    returned_before_open = !opened.load();
    returned = true;
  });
  // Not a timing threshold: the acquire may take as long as it likes, it must only not return
  // while the copy is still held back.
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(returned.load());
  opened = true;
  held.open();
  acquirer.join();
  CHECK(returned.load());
  REQUIRE_FALSE(threw.load());
  CHECK_FALSE(returned_before_open.load());
  CHECK(second.data == first.data);
  CHECK(pool->stats().waits >= 1);
  pool->discard(second);
}

TEST_CASE("pinned ring: with the copies done, the slot comes back without waiting", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_pinned_ring(*dev, 2, 4096, 0);
  held_stream held(*dev);
  const pinned_lease a = pool->acquire(4096);
  const pinned_lease b = pool->acquire(4096);
  CHECK(a.id != b.id);
  held.copy_and_release(*pool, a);
  held.copy_and_release(*pool, b);
  held.open();
  const auto waits = pool->stats().waits;
  const auto reuses = pool->stats().reuses;
  const pinned_lease c = pool->acquire(4096);
  CHECK((c.data == a.data || c.data == b.data));
  CHECK(pool->stats().waits == waits);
  CHECK(pool->stats().reuses == reuses + 1);
  pool->discard(c);
}

TEST_CASE("pinned ring: more than limit_bytes throws pinned_memory_error with the hint",
          "[loader]") {
  auto dev = host_backend(64_MiB);
  try {
    (void)make_pinned_ring(*dev, 4, 32_KiB, 64_KiB);
    FAIL("a ring of 4 x 32 KiB under a 64 KiB limit was made");
  } catch (const pinned_memory_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("RLIMIT_MEMLOCK"));
  }
  CHECK_NOTHROW(make_pinned_ring(*dev, 2, 32_KiB, 64_KiB));
}

TEST_CASE("pinned ring: concurrent acquires get distinct slots", "[loader]") {
  auto dev = host_backend(64_MiB);
  auto pool = make_pinned_ring(*dev, 4, 4096, 0);
  std::atomic<int> overlaps{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      const auto mark = static_cast<std::byte>(t + 1);
      for (int r = 0; r < 200; ++r) {
        const pinned_lease lease = pool->acquire(4096);
        std::fill(lease.data, lease.data + 4096, mark);
        std::this_thread::yield();
        if (std::any_of(lease.data, lease.data + 4096, [&](std::byte b) { return b != mark; }))
          overlaps.fetch_add(1);
        pool->discard(lease);
      }
    });
  }
  for (auto& w : workers) w.join();
  CHECK(overlaps.load() == 0);
  CHECK(pool->stats().in_use_bytes == 0);
}
