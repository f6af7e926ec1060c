// The allocators on a real device: the caching allocator over cudaMalloc and over the driver's
// virtual memory (expandable segments), the async strategy (cudaMallocAsync), and an allocator
// scenario end to end. Runs only where main.cpp finds a usable device.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"
#include "alloc/upstream.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;

namespace {

const std::size_t k_sizes[] = {1,         511,   512,        4097,   1_MiB - 1, 1_MiB,
                               1_MiB + 1, 3_MiB, 10_MiB + 7, 21_MiB, 64_MiB,    100_MiB};

// The invariants every memory_stats() must satisfy, whatever the strategy.
void check_invariants(const alloc::memory_stats& s) {
  CHECK(s.allocated_bytes.all.current >= 0);
  CHECK(s.allocated_bytes.all.current <= s.allocated_bytes.all.peak);
  CHECK(s.requested_bytes.all.current <= s.allocated_bytes.all.current);
  CHECK(s.reserved_bytes.all.current <= s.reserved_bytes.all.peak);
  CHECK(s.allocation.all.current ==
        s.allocation.small_pool.current + s.allocation.large_pool.current);
  CHECK(s.allocated_bytes.all.current ==
        s.allocated_bytes.small_pool.current + s.allocated_bytes.large_pool.current);
}

// Allocates every size on two streams, writes nothing (the memory is device memory), frees
// half, allocates again, frees everything: the allocator must hand back what it took.
void churn(alloc::device_allocator& a) {
  std::vector<void*> live;
  for (alloc::stream_id stream : {0U, 1U}) {
    for (const std::size_t bytes : k_sizes) {
      void* p = a.allocate(bytes, stream);
      REQUIRE(p != nullptr);
      live.push_back(p);
    }
  }
  const auto s = a.stats();
  check_invariants(s);
  CHECK(s.allocation.all.current == static_cast<std::int64_t>(live.size()));
  std::int64_t requested = 0;
  for (const std::size_t bytes : k_sizes) requested += 2 * static_cast<std::int64_t>(bytes);
  CHECK(s.requested_bytes.all.current == requested);
  CHECK(s.reserved_bytes.all.current >= s.allocated_bytes.all.current);
  for (std::size_t i = 0; i < live.size(); i += 2) a.deallocate(live[i]);
  for (std::size_t i = 0; i < live.size(); i += 2) live[i] = a.allocate(k_sizes[i % 12], 0);
  for (void* p : live) a.deallocate(p);
  const auto after = a.stats();
  check_invariants(after);
  CHECK(after.allocation.all.current == 0);
  CHECK(after.allocated_bytes.all.current == 0);
  CHECK(after.requested_bytes.all.current == 0);
}

// The device's free memory, as cudaMemGetInfo says.
std::size_t free_bytes(device::backend& dev) {
  return dev.device_memory().free_bytes;
}

}  // namespace

TEST_CASE("gpu: the caching allocator over cudaMalloc", "[gpu][allocator]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  const std::size_t free_before = free_bytes(*dev);
  auto up = alloc::make_backend_upstream(*dev, 0);
  auto a = alloc::make_caching_allocator(*up, alloc::parse_config("", "test", {}));
  churn(*a);
  const auto s = a->stats();
  CHECK(s.reserved_bytes.all.current > 0);
  // Small segments are 2 MiB, large ones multiples of 2 MiB (rounded as PyTorch rounds them).
  CHECK(s.reserved_bytes.all.current % static_cast<std::int64_t>(2_MiB) == 0);
  CHECK(s.num_device_alloc > 0);
  a->empty_cache();
  CHECK(a->stats().reserved_bytes.all.current == 0);
  CHECK(up->used() == 0);
  // The memory went back to the device (other processes may move free memory a little).
  CHECK(free_bytes(*dev) + 64_MiB >= free_before);
}

TEST_CASE("gpu: the caching allocator with expandable segments maps driver pages",
          "[gpu][allocator]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  if (!dev->supports_virtual_memory()) {
    WARN("the device or driver has no virtual memory management: nothing to test");
    return;
  }
  CHECK(dev->physical_granularity() > 0);
  CHECK(2_MiB % dev->physical_granularity() == 0);
  const std::size_t free_before = free_bytes(*dev);
  auto up = alloc::make_backend_upstream(*dev, 0);
  REQUIRE(up->supports_virtual_memory());
  auto a = alloc::make_caching_allocator(
      *up, alloc::parse_config("expandable_segments:True", "test", {}));
  churn(*a);
  const auto s = a->stats();
  CHECK(s.reserved_bytes.all.current > 0);
  CHECK(s.reserved_bytes.all.current % static_cast<std::int64_t>(2_MiB) == 0);
  CHECK(s.reserved_bytes.large_pool.current % static_cast<std::int64_t>(20_MiB) == 0);
  CHECK(static_cast<std::int64_t>(up->used()) == s.reserved_bytes.all.current);

  // Memory written through a mapped page reads back (the mapping is read/write for the device).
  void* p = a->allocate(30_MiB, 0);
  auto stream = dev->create_stream();
  auto host = dev->alloc_host(30_MiB, device::host_kind::pinned);
  for (std::size_t i = 0; i < host->bytes(); ++i) host->data()[i] = static_cast<std::byte>(i * 7);
  auto back = dev->alloc_host(30_MiB, device::host_kind::pinned);
  dev->copy_async(p, host->data(), 30_MiB, device::copy_dir::h2d, *stream);
  dev->copy_async(back->data(), p, 30_MiB, device::copy_dir::d2h, *stream);
  dev->synchronize(*stream);
  CHECK(std::equal(host->data(), host->data() + 30_MiB, back->data()));
  a->deallocate(p);

  a->empty_cache();
  CHECK(a->stats().reserved_bytes.all.current == 0);
  CHECK(up->used() == 0);
  CHECK(free_bytes(*dev) + 64_MiB >= free_before);
}

TEST_CASE("gpu: the async allocator (cudaMallocAsync)", "[gpu][allocator]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  if (!dev->supports_async_alloc()) {
    WARN("the device or driver has no memory pools: nothing to test");
    return;
  }
  auto a = alloc::make_async_allocator(*dev, 0);
  CHECK(a->name() == "async");
  churn(*a);
  const auto s = a->stats();
  CHECK(s.num_device_alloc == 3 * 12);
  CHECK(s.num_device_free == 3 * 12);
  // The pool keeps freed memory (release threshold UINT64_MAX) until empty_cache trims it.
  CHECK(s.reserved_bytes.all.peak >= static_cast<std::int64_t>(2 * 100_MiB));
  a->empty_cache();
  CHECK(a->stats().reserved_bytes.all.current < s.reserved_bytes.all.peak);

  SECTION("a request beyond the device is an oom_error, and the allocator goes on") {
    const std::size_t huge = dev->device_memory().total_bytes * 2;
    try {
      (void)a->allocate(huge, 0);
      FAIL("no oom_error");
    } catch (const alloc::oom_error& e) {
      CHECK(e.requested() == huge);
      CHECK(std::string(e.what()).find("out of memory") != std::string::npos);
    }
    CHECK(a->stats().num_ooms == 1);
    void* p = a->allocate(1_MiB, 0);
    CHECK(p != nullptr);
    a->deallocate(p);
  }
  SECTION("a capacity below the device's makes a smaller request fail") {
    auto capped = alloc::make_async_allocator(*dev, 8_MiB);
    void* p = capped->allocate(6_MiB, 0);
    CHECK_THROWS_AS((void)capped->allocate(4_MiB, 0), alloc::oom_error);
    capped->deallocate(p);
  }
}

TEST_CASE("gpu: the async allocator hands its pool back when it goes", "[gpu][allocator]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  if (!dev->supports_async_alloc()) {
    WARN("the device or driver has no memory pools: nothing to test");
    return;
  }
  const std::size_t before = free_bytes(*dev);
  {
    auto a = alloc::make_async_allocator(*dev, 0);
    void* p = a->allocate(512_MiB, 0);
    a->deallocate(p);  // back to the pool, which keeps it (release threshold UINT64_MAX)
    CHECK(a->stats().reserved_bytes.all.current >= static_cast<std::int64_t>(512_MiB));
  }
  // The next case (a caching allocator over cudaMalloc, say) sees the memory again.
  CHECK(free_bytes(*dev) + 64_MiB >= before);
}

TEST_CASE("gpu: an allocator scenario end to end on the cuda backend", "[gpu][allocator]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  const std::string text = R"({"schema": "pinbench.scenario/1", "name": "gpu-alloc",
    "kind": "allocator",
    "params": {"layers": 4, "activation_bytes": "4MiB", "parameter_bytes": "1MiB",
               "iterations": 4},
    "matrix": {"allocator": ["caching", "raw", "async"],
               "config": ["", "expandable_segments:True"]},
    "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 2, "min_time": "0",
                 "timeout": "20s"}})";
  run::plan_settings settings;
  settings.seed = 1;
  const auto r = run::run_scenarios(
      run::make_plan({scenario::parse_scenario(text, "gpu.json")}, settings), *dev, {});
  CHECK(r.backend == "cuda");
  const auto& cases = r.scenarios.at(0).cases;
  REQUIRE(cases.size() == 6);
  for (const auto& c : cases) {
    INFO(c.id << ": " << c.message);
    const bool unsupported =
        (c.id.find("async") != std::string::npos && !dev->supports_async_alloc()) ||
        (c.id.find("expandable") != std::string::npos &&
         c.id.find("caching") != std::string::npos && !dev->supports_virtual_memory());
    if (unsupported) continue;
    CHECK(c.status == result::case_status::ok);
    const auto* ooms = c.find("num_ooms");
    REQUIRE(ooms != nullptr);
    CHECK(ooms->samples.at(0) == 0);
    const auto* allocated = c.find("allocated_bytes.all.peak");
    REQUIRE(allocated != nullptr);
    CHECK(allocated->samples.at(0) > 0);
  }
}
