// The allocators' upstreams: the address-only arena of the host emulation and the backend's own
// device memory.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "alloc_support.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"

using namespace pinbench;
using namespace pinbench::alloc;
using pinbench::testing::addr;

TEST_CASE("arena: aligned first-fit ranges under an exact capacity", "[alloc]") {
  auto up = make_arena_upstream(10_MiB);
  CHECK(up->name() == "arena");
  CHECK(up->capacity() == 10_MiB);
  CHECK(up->used() == 0);

  void* a = up->allocate(1000);  // rounds to 1024
  void* b = up->allocate(4_MiB);
  void* c = up->allocate(1_MiB);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  REQUIRE(c != nullptr);
  CHECK(addr(a) % 512 == 0);
  CHECK(addr(b) == addr(a) + 1024);
  CHECK(addr(c) == addr(b) + 4_MiB);
  CHECK(up->used() == 1024 + 5_MiB);

  // Capacity counts bytes, not address space: 5 MiB - 1024 are left.
  CHECK(up->allocate(5_MiB) == nullptr);
  void* d = up->allocate(5_MiB - 1024);
  CHECK(d != nullptr);
  CHECK(up->used() == 10_MiB);
  CHECK(up->allocate(1) == nullptr);

  // Freed neighbours coalesce and are found first.
  up->deallocate(a, 1000);
  up->deallocate(b, 4_MiB);
  CHECK(up->used() == 6_MiB - 1024);
  void* e = up->allocate(4_MiB + 1024);
  CHECK(e == a);
  CHECK_THROWS_AS(up->deallocate(b, 4_MiB), device_error);  // inside e now, not its start
  up->deallocate(c, 1_MiB);
  up->deallocate(d, 5_MiB - 1024);
  up->deallocate(e, 4_MiB + 1024);
  CHECK(up->used() == 0);
  up->synchronize();  // a no-op, but callable
}

TEST_CASE("arena: reserved address space is free, mapped pages count", "[alloc]") {
  auto up = make_arena_upstream(100_MiB);
  REQUIRE(up->supports_virtual_memory());
  CHECK(up->granularity() == 2_MiB);
  void* base = up->reserve_address(1_GiB);  // ten times the capacity: only addresses
  CHECK(up->used() == 0);
  void* other = up->allocate(60_MiB);
  REQUIRE(other != nullptr);
  CHECK((addr(other) + 60_MiB <= addr(base) || addr(other) >= addr(base) + 1_GiB));

  auto* page = static_cast<char*>(base);  // arithmetic only: the arena is never touched
  CHECK(up->map(page, 20_MiB));
  CHECK(up->map(page + 20_MiB, 20_MiB));
  CHECK(up->used() == 100_MiB);
  CHECK_FALSE(up->map(page + 40_MiB, 2_MiB));  // the capacity is used up
  up->unmap(page, 20_MiB);
  CHECK(up->used() == 80_MiB);
  CHECK_THROWS_AS((void)up->map(page + 2_GiB, 2_MiB), device_error);  // outside the range
  up->release_address(base, 1_GiB);  // pages still mapped go with it
  CHECK(up->used() == 60_MiB);
  up->deallocate(other, 60_MiB);
  CHECK(up->used() == 0);
}

TEST_CASE("backend upstream: the backend's memory under a capacity cap", "[alloc]") {
  device::backend_options options;
  options.host_device_capacity = 64_MiB;
  auto dev = device::platform::host(options).open(0);
  auto up = make_backend_upstream(*dev, 32_MiB);
  CHECK(up->name() == "host");
  CHECK(up->capacity() == 32_MiB);
  CHECK_FALSE(up->supports_virtual_memory());
  CHECK_THROWS_WITH((void)up->reserve_address(2_MiB),
                    Catch::Contains("expandable segments need the driver's virtual memory API"));

  void* p = up->allocate(10_MiB);
  REQUIRE(p != nullptr);
  CHECK(addr(p) % 512 == 0);
  CHECK(up->used() == 10_MiB);
  CHECK(up->allocate(24_MiB) == nullptr);  // over the 32 MiB cap
  up->deallocate(p, 10_MiB);
  CHECK(up->used() == 0);

  // The whole device when no cap is given; an exhausted device is a nullptr, not a throw.
  auto whole = make_backend_upstream(*dev, 0);
  CHECK(whole->capacity() == 64_MiB);
  void* held = up->allocate(30_MiB);
  REQUIRE(held != nullptr);
  CHECK(whole->allocate(40_MiB) == nullptr);  // under its cap, but the device has 34 MiB left
  CHECK(whole->used() == 0);
  up->deallocate(held, 30_MiB);

  SECTION("the caching allocator runs on it, and expandable segments are refused") {
    auto a = make_caching_allocator(*up, config{});
    void* q = a->allocate(4_MiB, 0);
    CHECK(a->stats().reserved_bytes.all.current == 20 * (1 << 20));
    // 18 MiB does not fit the 16 MiB cached behind q: an 18 MiB segment, 20 + 18 > 32 MiB,
    // and q's segment cannot be released: out of memory.
    CHECK_THROWS_WITH((void)a->allocate(18_MiB, 0),
                      Catch::StartsWith("CUDA out of memory. Tried to allocate 18.00 MiB. "
                                        "Host-emulated device has a total capacity of 32.00 MiB "
                                        "of which 12.00 MiB is free."));
    void* r = a->allocate(10_MiB, 0);  // still works: from the cached remainder
    CHECK(up->used() == 20_MiB);
    a->deallocate(r);
    a->deallocate(q);
    a->empty_cache();
    CHECK(up->used() == 0);

    config expandable;
    expandable.expandable_segments = true;
    auto e = make_caching_allocator(*up, expandable);
    CHECK_THROWS_AS((void)e->allocate(4_MiB, 0), device_error);
  }
}
