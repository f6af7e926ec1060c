// The CUDA backend on a real device: data integrity, stream ordering under gates, compute timing,
// copy/compute overlap, out-of-memory recovery. Runs only where main.cpp finds a usable device.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using namespace pinbench::device;

namespace {

std::unique_ptr<backend> cuda() {
  return open_platform(backend_choice::cuda).open_home();
}

void fill_pattern(std::byte* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
}

bool same(const std::byte* a, const std::byte* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

TEST_CASE("cuda: h2d, d2d and d2h round trips keep the data, for every host kind and size",
          "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  const host_kind kinds[] = {host_kind::pageable, host_kind::pinned, host_kind::pinned_wc,
                             host_kind::registered};
  const std::size_t sizes[] = {0, 1, 4097, 8_MiB};
  for (const host_kind kind : kinds) {
    for (const std::size_t bytes : sizes) {
      INFO("kind " << to_string(kind) << ", " << bytes << " bytes");
      auto src = b->alloc_host(bytes, kind);
      auto dst = b->alloc_host(bytes, kind);
      REQUIRE(src->bytes() == bytes);
      REQUIRE(src->kind() == kind);
      CHECK(src->page_locked() == (kind != host_kind::pageable));
      fill_pattern(src->data(), bytes, 7);
      if (bytes > 0) std::memset(dst->data(), 0xa5, bytes);
      auto dev1 = b->alloc_device(bytes);
      auto dev2 = b->alloc_device(bytes);
      REQUIRE(dev1->bytes() == bytes);
      b->copy_async(dev1->data(), src->data(), bytes, copy_dir::h2d, *s);
      b->copy_async(dev2->data(), dev1->data(), bytes, copy_dir::d2d, *s);
      b->copy_async(dst->data(), dev2->data(), bytes, copy_dir::d2h, *s);
      b->synchronize(*s);
      CHECK(same(src->data(), dst->data(), bytes));
    }
  }
}

TEST_CASE("cuda: register_host pins a pageable range for a copy", "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  const std::size_t bytes = 4_MiB + 3;
  auto src = b->alloc_host(bytes, host_kind::pageable);
  auto dst = b->alloc_host(bytes, host_kind::pageable);
  fill_pattern(src->data(), bytes, 3);
  std::memset(dst->data(), 0, bytes);
  auto dev = b->alloc_device(bytes);
  b->register_host(src->data(), bytes);
  b->copy_async(dev->data(), src->data(), bytes, copy_dir::h2d, *s);
  b->synchronize(*s);
  b->unregister_host(src->data());
  b->copy_async(dst->data(), dev->data(), bytes, copy_dir::d2h, *s);
  b->synchronize(*s);
  CHECK(same(src->data(), dst->data(), bytes));
  // Unregistering what was never registered is an error, not silence.
  CHECK_THROWS_AS(b->unregister_host(dst->data()), device_error);
}

TEST_CASE("cuda: a pinned non_blocking copy behind a gate waits for the release", "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  auto done = b->create_event();
  const std::size_t bytes = 8_MiB;
  auto src = b->alloc_host(bytes, host_kind::pinned);
  auto back = b->alloc_host(bytes, host_kind::pinned);
  fill_pattern(src->data(), bytes, 11);
  auto dev = b->alloc_device(bytes);

  auto g = b->launch_gate(*s);
  b->copy_async(dev->data(), src->data(), bytes, copy_dir::h2d, *s);
  b->record(*done, *s);
  sleep_ms(100);  // ample time for an 8 MiB copy had it not been held
  CHECK_FALSE(b->query(*done));
  g->release();
  g->release();  // idempotent
  b->synchronize(*done);
  CHECK(b->query(*done));
  b->copy_async(back->data(), dev->data(), bytes, copy_dir::d2h, *s);
  b->synchronize(*s);
  CHECK(same(src->data(), back->data(), bytes));
  CHECK(b->warnings().empty());
}

TEST_CASE("cuda: a released gate did not time out, the device says whether it can register",
          "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  auto g = b->launch_gate(*s);
  g->release();
  b->synchronize(*s);
  CHECK_FALSE(g->timed_out());
  const auto d = b->describe();
  REQUIRE(d.host_register.has_value());
  CHECK(*d.host_register == b->host_register_unsupported().empty());
}

TEST_CASE("cuda: small copies are timed in batches with finite bandwidth", "[gpu]") {
  auto b = cuda();
  const auto sc = scenario::parse_scenario(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "4KiB"},
      "matrix": {"memory": ["pinned", "pageable"]},
      "sampling": {"warmup": 1, "min_samples": 5, "max_samples": 20, "min_time": "0",
                   "timeout": "2s"}})",
                                           "t.json");
  const auto r = run::run_scenarios(run::make_plan({sc}, {}), *b, {});
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id << ": " << c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("copies_per_sample") == 16);
    for (double bw : c.find("bandwidth")->samples) CHECK(std::isfinite(bw));
  }
}

TEST_CASE("cuda: another stream waits on an event recorded behind a gate", "[gpu]") {
  auto b = cuda();
  auto held = b->create_stream();
  auto waiting = b->create_stream();
  auto mark = b->create_event();
  auto after = b->create_event();
  auto g = b->launch_gate(*held);
  b->record(*mark, *held);
  b->wait(*waiting, *mark);
  b->record(*after, *waiting);
  sleep_ms(50);
  CHECK_FALSE(b->query(*mark));
  CHECK_FALSE(b->query(*after));
  g->release();
  b->synchronize(*after);
  CHECK(b->query(*mark));
}

TEST_CASE("cuda: destroying an unreleased gate releases its stream", "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  auto done = b->create_event();
  const auto start = std::chrono::steady_clock::now();
  {
    auto g = b->launch_gate(*s);
    b->record(*done, *s);
  }
  b->synchronize(*done);
  // The kernel's own safety timeout is 10 s; the destructor must not need it.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // Many gates in a row reuse the flag slots once their kernels have exited.
  for (int i = 0; i < 600; ++i) {
    auto g = b->launch_gate(*s);
    g->release();
  }
  b->synchronize(*s);
  CHECK(b->warnings().empty());
}

TEST_CASE("cuda: launch_compute of 20 ms takes about 20 ms of device time", "[gpu]") {
  auto b = cuda();
  auto s = b->create_stream();
  auto start = b->create_event();
  auto end = b->create_event();
  b->launch_compute(*s, 1'000'000);  // warm-up: module load, first launch
  b->record(*start, *s);
  b->launch_compute(*s, 20'000'000);
  b->record(*end, *s);
  b->synchronize(*end);
  const double ns = b->elapsed_ns(*start, *end);
  CHECK(ns >= 15e6);
  CHECK(ns <= 200e6);
  // Zero and negative durations enqueue nothing.
  b->record(*start, *s);
  b->launch_compute(*s, 0);
  b->launch_compute(*s, -5);
  b->record(*end, *s);
  b->synchronize(*end);
  CHECK(b->elapsed_ns(*start, *end) < 5e6);
}

TEST_CASE("cuda: compute on one stream overlaps a pinned copy on another", "[gpu]") {
  auto b = cuda();
  auto compute = b->create_stream();
  auto copy = b->create_stream();
  auto t0 = b->create_event();
  auto compute_end = b->create_event();
  auto copy_start = b->create_event();
  auto copy_end = b->create_event();
  const std::size_t bytes = 64_MiB;
  auto src = b->alloc_host(bytes, host_kind::pinned);
  auto dev = b->alloc_device(bytes);
  fill_pattern(src->data(), bytes, 5);
  b->launch_compute(*compute, 1'000'000);  // warm-up
  b->synchronize();

  b->record(*t0, *compute);
  b->launch_compute(*compute, 300'000'000);
  b->record(*compute_end, *compute);
  sleep_ms(20);  // the compute kernel is certainly running now
  b->record(*copy_start, *copy);
  b->copy_async(dev->data(), src->data(), bytes, copy_dir::h2d, *copy);
  b->record(*copy_end, *copy);
  b->synchronize(*copy_end);
  const bool compute_still_running = !b->query(*compute_end);
  b->synchronize(*compute_end);

  const double copy_start_ns = b->elapsed_ns(*t0, *copy_start);
  const double copy_end_ns = b->elapsed_ns(*t0, *copy_end);
  const double compute_end_ns = b->elapsed_ns(*t0, *compute_end);
  INFO("copy " << copy_start_ns / 1e6 << ".." << copy_end_ns / 1e6 << " ms, compute ends at "
               << compute_end_ns / 1e6 << " ms");
  CHECK(compute_still_running);
  CHECK(copy_start_ns > 0);
  // Serialised, the copy would end after the compute; overlapped, it ends long before.
  CHECK(copy_end_ns < compute_end_ns - 100e6);
}

TEST_CASE("cuda: an absurd allocation is out_of_memory and the backend still works", "[gpu]") {
  auto b = cuda();
  constexpr std::size_t one_pib = std::size_t{1} << 50;
  REQUIRE_THROWS_AS(b->device_malloc(one_pib), out_of_memory);
  REQUIRE_THROWS_AS(b->alloc_device(one_pib), out_of_memory);
  try {
    static_cast<void>(b->alloc_device(one_pib));
  } catch (const out_of_memory& e) {
    CHECK_THAT(e.what(), Catch::Contains("cudaErrorMemoryAllocation"));
  }
  REQUIRE_THROWS_AS(b->alloc_host(one_pib, host_kind::pinned), pinned_memory_error);

  // Nothing sticky was left behind: allocate, copy, launch, synchronise.
  auto s = b->create_stream();
  const std::size_t bytes = 1_MiB;
  auto src = b->alloc_host(bytes, host_kind::pinned);
  auto dst = b->alloc_host(bytes, host_kind::pinned);
  fill_pattern(src->data(), bytes, 9);
  auto dev = b->alloc_device(bytes);
  b->copy_async(dev->data(), src->data(), bytes, copy_dir::h2d, *s);
  b->launch_compute(*s, 100'000);
  b->copy_async(dst->data(), dev->data(), bytes, copy_dir::d2h, *s);
  b->synchronize();
  CHECK(same(src->data(), dst->data(), bytes));
  void* raw = b->device_malloc(bytes);
  CHECK(raw != nullptr);
  b->device_free(raw);
  CHECK(b->device_malloc(0) == nullptr);
  b->device_free(nullptr);
}

TEST_CASE("cuda: the host link's ceiling is a PCIe figure or a reason, never both", "[gpu]") {
  auto b = cuda();
  const auto c = b->host_link();
  CHECK_FALSE(c.measure_host_memcpy);
  INFO("source: " << c.source << " reason: " << c.reason);
  if (c.gbps) {
    CHECK(*c.gbps > 0);
    CHECK_THAT(c.source, Catch::StartsWith("PCIe gen"));
  } else {
    CHECK_FALSE(c.reason.empty());
  }
}

TEST_CASE("cuda: describe and device memory", "[gpu]") {
  auto b = cuda();
  CHECK(b->name() == "cuda");
  const auto d = b->describe();
  CHECK_FALSE(d.name.empty());
  CHECK(d.memory_bytes > 0);
  REQUIRE(d.uuid.has_value());
  CHECK_THAT(*d.uuid, Catch::StartsWith("GPU-"));
  CHECK(d.uuid->size() == 40);
  REQUIRE(d.driver.has_value());
  CHECK_FALSE(d.driver->empty());
  REQUIRE(d.runtime.has_value());
  CHECK_FALSE(d.runtime->empty());
  CHECK_FALSE(d.emulated);
  CHECK(d.pcie.has_value());
  CHECK(d.multiprocessors.value_or(0) > 0);

  const memory_info before = b->device_memory();
  CHECK(before.total_bytes > 0);
  CHECK(before.free_bytes <= before.total_bytes);
  auto big = b->alloc_device(256_MiB);
  const memory_info during = b->device_memory();
  CHECK(during.free_bytes + 200_MiB <= before.free_bytes);
}

TEST_CASE("cuda: objects of another backend are refused", "[gpu]") {
  auto b = cuda();
  backend_options small;
  small.host_device_capacity = 64_MiB;
  auto host = platform::host(small).open(0);
  auto foreign = host->create_stream();
  auto buf = b->alloc_device(16);
  CHECK_THROWS_AS(b->launch_compute(*foreign, 1000), device_error);
  CHECK_THROWS_AS(b->copy_async(buf->data(), buf->data(), 16, copy_dir::d2d, *foreign),
                  device_error);
}
