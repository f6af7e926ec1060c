// Stopping the loader from every stage: before the first batch, with the queue full, with the
// workers busy, with a batch still held, with the ring's pin stage waiting for a slot; a worker
// that throws; Ctrl-C while the consumer waits. Each must end without a thread left running:
// every destruction runs under a watchdog, so that a deadlock fails instead of hanging.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "loader/pinned_pool.hpp"
#include "loader_support.hpp"

using namespace pinbench;
using namespace pinbench::loader;
using namespace pinbench::loader::testing;
using namespace std::chrono_literals;

namespace {

/// Waits (at most 10 s, no assertion) until the epoch has had `bound` batches outstanding.
void wait_until_full(const epoch& ep, std::size_t bound) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ep.stats().max_outstanding_seen < bound && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
}

/// Consumes a whole epoch under the watchdog: the pool left behind by an earlier epoch works.
std::size_t run_epoch(const dataset& data, const loader_spec& spec, device::backend& dev,
                      pinned_pool* pool) {
  std::size_t delivered = 0;
  must_finish("a later epoch on the same pool", [&] {
    epoch ep(data, spec, 1, dev, pool);
    while (auto b = ep.next()) {
      ep.release(*b, nullptr);
      ++delivered;
    }
  });
  return delivered;
}

/// After an epoch is gone, none of the pool's memory is still lent out (every batch the epoch
/// or its consumer held went back, and nothing here was released with a copy still pending).
void check_nothing_lent(const pinned_pool* pool) {
  if (pool != nullptr) CHECK(pool->stats().in_use_bytes == 0);
}

/// Clears the interrupt flag however the test ends.
struct interrupt_reset {
  interrupt_reset() { clear_interrupt(); }
  ~interrupt_reset() { clear_interrupt(); }
  interrupt_reset(const interrupt_reset&) = delete;
  interrupt_reset& operator=(const interrupt_reset&) = delete;
};

}  // namespace

TEST_CASE("epoch shutdown: destroyed before the first next()", "[loader]") {
  const int workers = GENERATE(0, 1, 4, 8);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend(64_MiB);
  const dataset data(small_spec(300, 256, 2'000));
  const loader_spec spec = make_loader_spec(workers, pin, 8);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  must_finish("destroying an epoch before its first batch", [&] { ep.reset(); });
  check_nothing_lent(pool.get());
  CHECK(run_epoch(data, spec, *dev, pool.get()) == 300 / 8 + 1);
}

TEST_CASE("epoch shutdown: destroyed after one batch, with the queue full", "[loader]") {
  const int workers = GENERATE(1, 3);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend(64_MiB);
  const dataset data(small_spec(400, 256, 0));
  const loader_spec spec = make_loader_spec(workers, pin, 8);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  auto b = ep->next();
  REQUIRE(b);
  ep->release(*b, nullptr);
  wait_until_full(*ep, max_outstanding(spec));
  must_finish("destroying an epoch with a full queue", [&] { ep.reset(); });
  check_nothing_lent(pool.get());
  CHECK(run_epoch(data, spec, *dev, pool.get()) == 400 / 8);
}

TEST_CASE("epoch shutdown: destroyed while the workers are busy", "[loader]") {
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const bool after_one_batch = GENERATE(false, true);
  const std::string pin_name(to_string(pin));
  CAPTURE(pin_name, after_one_batch);
  auto dev = host_backend(64_MiB);
  // 200 us of CPU work per sample, 16 per batch: each worker is mid-batch for milliseconds.
  const dataset data(small_spec(400, 256, 200'000));
  const loader_spec spec = make_loader_spec(4, pin, 16);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  if (after_one_batch) {
    auto b = ep->next();
    REQUIRE(b);
    ep->release(*b, nullptr);
  }
  must_finish("destroying an epoch with busy workers", [&] { ep.reset(); });
  check_nothing_lent(pool.get());
}

TEST_CASE("epoch shutdown: destroyed while the consumer still holds a batch", "[loader]") {
  const int workers = GENERATE(0, 2);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend(64_MiB);
  const dataset data(small_spec(200, 256, 0));
  const loader_spec spec = make_loader_spec(workers, pin, 8);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  std::optional<batch> held = ep->next();
  REQUIRE(held);
  CHECK(held->number == 0);
  must_finish("destroying an epoch while a batch is held", [&] { ep.reset(); });
  held.reset();
  check_nothing_lent(pool.get());
  // Whatever the held batch had from the pool did not get lost with the epoch.
  CHECK(run_epoch(data, spec, *dev, pool.get()) == 200 / 8);
}

TEST_CASE("epoch shutdown: destroyed while the ring's pin stage waits for a slot", "[loader]") {
  auto dev = host_backend(64_MiB);
  const dataset data(small_spec(400, 256, 0));
  const loader_spec spec = make_loader_spec(2, pinning::ring, 8);
  auto pool = make_pool(pinning::ring, *dev, spec, data.sample_bytes());
  const auto s = dev->create_stream();
  const auto target = dev->alloc_device(1_MiB);
  auto gate = dev->launch_gate(*s);

  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  // Two batches copied on the held stream: their slots stay guarded by pending copies, so the
  // pin stage, refilling the queue, runs out of free slots and waits for one.
  for (std::size_t i = 0; i < 2; ++i) {
    auto b = ep->next();
    REQUIRE(b);
    dev->copy_async(target->data() + i * b->bytes, b->data, b->bytes, device::copy_dir::h2d, *s);
    ep->release(*b, s.get());
  }
  std::this_thread::sleep_for(50ms);  // lets the pin stage reach the wait (not asserted)

  // The device finishes its work a little later, as a real GPU would.
  std::thread device_finishes([&] {
    std::this_thread::sleep_for(100ms);
    gate->release();
  });
  must_finish("destroying an epoch whose pin stage waits for a ring slot", [&] { ep.reset(); });
  device_finishes.join();
  dev->synchronize(*s);
  CHECK(pool->stats().in_use_bytes == 0);  // ring: in use means lent out
  CHECK(run_epoch(data, spec, *dev, pool.get()) == 400 / 8);
}

TEST_CASE("epoch: a worker that throws fails next() with loader_error naming it", "[loader]") {
  const int workers = GENERATE(0, 1, 2, 4);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend(64_MiB);
  dataset_spec ds = small_spec(200, 128, 1'000);
  constexpr std::uint64_t bad = 37;  // in batch 4 (samples 32..39)
  ds.fail_at_sample = static_cast<std::int64_t>(bad);
  const dataset data(ds);

  std::string fault;  // what the dataset itself says about the sample
  try {
    std::vector<std::byte> out(data.sample_bytes());
    sample_header header;
    data.produce(bad, out.data(), header);
  } catch (const loader_error& e) {
    fault = e.what();
  }
  REQUIRE_FALSE(fault.empty());

  const loader_spec spec = make_loader_spec(workers, pin, 8);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  std::vector<std::uint64_t> numbers;
  bool delivered_bad = false;
  std::string message;
  bool other_error = false;
  must_finish("consuming up to the failing batch", [&] {
    try {
      while (auto b = ep->next()) {
        numbers.push_back(b->number);
        for (std::size_t i = 0; i < b->samples; ++i)
          delivered_bad = delivered_bad || b->headers()[i].index == bad;
        ep->release(*b, nullptr);
      }
    } catch (const loader_error& e) {
      message = e.what();
    } catch (...) {
      other_error = true;
    }
  });
  CHECK_FALSE(other_error);
  REQUIRE_FALSE(message.empty());
  CHECK_THAT(message, Catch::Contains(fault));
  if (workers > 0) CHECK_THAT(message, Catch::Contains("worker"));
  CHECK_FALSE(delivered_bad);
  CHECK(numbers.size() <= 4);
  for (std::size_t i = 0; i < numbers.size(); ++i) CHECK(numbers[i] == i);
  must_finish("destroying an epoch after a worker failed", [&] { ep.reset(); });
  check_nothing_lent(pool.get());
}

TEST_CASE("epoch: Ctrl-C while next() waits for slow workers throws interrupted_error",
          "[loader]") {
  const pinning pin = GENERATE(pinning::off, pinning::per_batch);
  const std::string pin_name(to_string(pin));
  CAPTURE(pin_name);
  const interrupt_reset reset;
  auto dev = host_backend(64_MiB);
  // 20 ms of CPU work per sample, 4 per batch: the consumer waits for every batch.
  const dataset data(small_spec(64, 256, 20'000'000));
  const loader_spec spec = make_loader_spec(2, pin, 4);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  auto ep = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());

  std::thread ctrl_c([] {
    std::this_thread::sleep_for(30ms);
    request_interrupt();
  });
  std::size_t delivered = 0;
  bool interrupted = false;
  bool other_error = false;
  must_finish("an interrupted next()", [&] {
    try {
      while (auto b = ep->next()) {
        ep->release(*b, nullptr);
        ++delivered;
      }
    } catch (const interrupted_error&) {
      interrupted = true;
    } catch (...) {
      other_error = true;
    }
  });
  ctrl_c.join();
  CHECK(interrupted);
  CHECK_FALSE(other_error);
  CHECK(delivered < ep->batch_count());
  must_finish("destroying an interrupted epoch", [&] { ep.reset(); });
  check_nothing_lent(pool.get());
}
