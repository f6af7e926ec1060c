// The loader's epoch: batches arrive in order, each sample exactly once, with the bytes and
// headers the dataset made, for every worker count, with and without pinning in both pin modes;
// the data is checked again after it went through the (host backend's) device; at most
// max_outstanding(spec) batches are ever outstanding, and a slow consumer lets them fill up.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
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

/// Problems found, the first few kept with where they were seen, so that one CHECK reports them.
class findings {
 public:
  void add(std::string what) {
    ++count_;
    if (kept_.size() < 12) kept_.push_back(std::move(what));
  }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::string text() const {
    std::string out = std::to_string(count_) + " problem(s):";
    for (const auto& k : kept_) out += "\n  " + k;
    return out;
  }

 private:
  std::size_t count_ = 0;
  std::vector<std::string> kept_;
};

/// index -> checksum, as first seen: the same sample must carry the same checksum every time,
/// whichever worker, epoch or pin mode made it.
using checksum_map = std::unordered_map<std::uint64_t, std::uint64_t>;

/// Checks a batch laid out as batch_bytes() says (headers, then the samples) against the
/// dataset: the indices of `expected`, their raw bytes, consistent checksums.
void check_batch_layout(const std::byte* base, const std::vector<std::uint64_t>& expected,
                        const dataset& data, checksum_map& checksums, const std::string& where,
                        findings& found) {
  const std::size_t n = expected.size();
  const std::size_t sample_bytes = data.sample_bytes();
  std::vector<std::byte> raw(sample_bytes);
  for (std::size_t i = 0; i < n; ++i) {
    sample_header h;
    std::memcpy(&h, base + i * sizeof(sample_header), sizeof h);
    const std::string at = where + " sample " + std::to_string(i);
    if (h.index != expected[i]) {
      found.add(at + ": header index " + std::to_string(h.index) + ", expected " +
                std::to_string(expected[i]));
      continue;
    }
    if (data.units_per_sample() > 0 && h.checksum == 0) found.add(at + ": checksum is 0");
    const auto [it, first] = checksums.emplace(h.index, h.checksum);
    if (!first && it->second != h.checksum)
      found.add(at + ": checksum of sample " + std::to_string(h.index) + " differs from before");
    data.raw_bytes(h.index, raw.data());
    const std::byte* bytes = base + n * sizeof(sample_header) + i * sample_bytes;
    if (std::memcmp(bytes, raw.data(), sample_bytes) != 0)
      found.add(at + ": bytes differ from raw_bytes(" + std::to_string(h.index) + ")");
  }
}

struct consumer_options {
  std::chrono::microseconds delay{0};  ///< sleep before each next(): a slow consumer
  /// Device work queued before each copy, so that copies are still pending when the pool is
  /// asked for memory again (a block reused too early would corrupt what reaches the device).
  std::int64_t compute_ns = 20'000;
};

struct epoch_outcome {
  std::size_t batches = 0;
  std::size_t expected_batches = 0;
  std::size_t batch_count = 0;
  epoch_stats stats;
  findings found;
};

/// Consumes one epoch as a training step does (next, copy to the device, release on the copy's
/// stream) and checks every batch on the host and again on the device after the epoch.
epoch_outcome consume_and_check(const dataset& data, const loader_spec& spec,
                                std::uint64_t epoch_number, device::backend& dev, pinned_pool* pool,
                                checksum_map& checksums, const consumer_options& options = {}) {
  epoch_outcome out;
  const auto expected = epoch_batches(data.size(), spec, epoch_number);
  out.expected_batches = expected.size();
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const auto& b : expected) {
    offsets.push_back(total);
    total += batch_bytes(b.size(), data.sample_bytes());
  }

  const auto s = dev.create_stream();
  const auto target = dev.alloc_device(std::max<std::size_t>(total, 1));
  {
    auto owned = std::make_unique<epoch>(data, spec, epoch_number, dev, pool);
    epoch& ep = *owned;
    out.batch_count = ep.batch_count();
    for (;;) {
      if (options.delay.count() > 0) std::this_thread::sleep_for(options.delay);
      std::optional<batch> b = ep.next();
      if (!b) break;
      const std::size_t n = out.batches++;
      const std::string where =
          "epoch " + std::to_string(epoch_number) + " batch " + std::to_string(n);
      if (n >= expected.size()) {
        out.found.add(where + ": more batches than epoch_batches() has");
        ep.release(*b, nullptr);
        continue;
      }
      if (b->number != n) out.found.add(where + ": number is " + std::to_string(b->number));
      if (b->samples != expected[n].size())
        out.found.add(where + ": " + std::to_string(b->samples) + " samples, expected " +
                      std::to_string(expected[n].size()));
      if (b->bytes != batch_bytes(expected[n].size(), data.sample_bytes()))
        out.found.add(where + ": " + std::to_string(b->bytes) + " bytes");
      if (b->pinned != spec.pin_memory)
        out.found.add(where + (b->pinned ? ": pinned" : ": not pinned"));
      if (spec.num_workers == 0 ? b->worker != -1
                                : (b->worker < 0 || b->worker >= spec.num_workers))
        out.found.add(where + ": built by worker " + std::to_string(b->worker));
      if (b->data == nullptr || b->samples != expected[n].size() ||
          b->bytes != batch_bytes(expected[n].size(), data.sample_bytes())) {
        ep.release(*b, nullptr);
        continue;
      }
      check_batch_layout(b->data, expected[n], data, checksums, where, out.found);

      dev.launch_compute(*s, options.compute_ns);
      dev.copy_async(target->data() + offsets[n], b->data, b->bytes, device::copy_dir::h2d, *s);
      ep.release(*b, s.get());
    }
    out.stats = ep.stats();
    must_finish("destroying an epoch at its end", [&] { owned.reset(); });
  }
  dev.synchronize(*s);
  // The host backend's device memory is host memory: what arrived can be read back directly.
  for (std::size_t n = 0; n < std::min(out.batches, expected.size()); ++n) {
    check_batch_layout(
        target->data() + offsets[n], expected[n], data, checksums,
        "on the device: epoch " + std::to_string(epoch_number) + " batch " + std::to_string(n),
        out.found);
  }
  return out;
}

void check_outcome(const epoch_outcome& out, const loader_spec& spec) {
  INFO(out.found.text());
  CHECK(out.found.empty());
  CHECK(out.batches == out.expected_batches);
  CHECK(out.batch_count == out.expected_batches);
  CHECK(out.stats.batches_delivered == out.batches);
  CHECK(out.stats.max_outstanding_seen <= max_outstanding(spec));
}

}  // namespace

TEST_CASE("epoch: every sample once, in order, for every worker count and pin mode", "[loader]") {
  const int workers = GENERATE(0, 1, 2, 3, 4, 8);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);

  auto dev = host_backend();
  // 203 samples of 200 B in batches of 16: 12 full batches and a partial one of 11; sample
  // bytes that are not a multiple of the header size check the layout's arithmetic.
  const dataset data(small_spec(203, 200, 2'000));
  checksum_map checksums;
  for (const bool shuffle : {false, true}) {
    for (const bool drop_last : {false, true}) {
      CAPTURE(shuffle, drop_last);
      const loader_spec spec = make_loader_spec(workers, pin, 16, shuffle, drop_last);
      auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
      // Two epochs on one pool: the second reuses what the first's copies released.
      for (const std::uint64_t epoch_number : {0u, 1u}) {
        CAPTURE(epoch_number);
        check_outcome(consume_and_check(data, spec, epoch_number, *dev, pool.get(), checksums),
                      spec);
      }
      if (pool) CHECK(pool->stats().reuses > 0);
    }
  }
  CHECK(checksums.size() == data.size());
}

TEST_CASE("epoch: process workers deliver every sample once, in order, in every pin mode",
          "[loader][process]") {
  const int workers = GENERATE(1, 2, 4);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend();
  const dataset data(small_spec(203, 200, 2'000));
  checksum_map checksums;
  for (const bool shuffle : {false, true}) {
    CAPTURE(shuffle);
    loader_spec spec = make_loader_spec(workers, pin, 16, shuffle);
    spec.method = worker_method::process;
    auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
    for (const std::uint64_t epoch_number : {0u, 1u}) {
      CAPTURE(epoch_number);
      const auto out = consume_and_check(data, spec, epoch_number, *dev, pool.get(), checksums);
      check_outcome(out, spec);
      CHECK(out.stats.worker_starts == 1);
      CHECK(out.stats.worker_startup_ns > 0);
      CHECK(out.stats.peak_shm_bytes >= batch_bytes(16, data.sample_bytes()));
    }
  }
  CHECK(checksums.size() == data.size());
}

TEST_CASE("epoch: larger samples from a file, several workers, both pin modes", "[loader]") {
  const pinning pin = GENERATE(pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(pin_name);
  auto dev = host_backend();
  dataset_spec ds = small_spec(150, 4096, 1'000);
  ds.source = dataset_spec::source_kind::file;
  const dataset data(ds);
  checksum_map checksums;
  const loader_spec spec = make_loader_spec(3, pin, 8, /*shuffle=*/true);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  check_outcome(consume_and_check(data, spec, 0, *dev, pool.get(), checksums), spec);
}

TEST_CASE("epoch: pinning refused by the backend falls back to unlocked memory", "[loader]") {
  const pinning pin = GENERATE(pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(pin_name);
  auto dev = host_backend(256_MiB, /*refuse_pinning=*/true);
  const dataset data(small_spec(100, 256, 0));
  const loader_spec spec = make_loader_spec(2, pin, 10);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  {
    epoch ep(data, spec, 0, *dev, pool.get());
    auto b = ep.next();
    REQUIRE(b);
    CHECK(b->pinned);
    CHECK_FALSE(b->lease.page_locked);
    ep.release(*b, nullptr);
  }
  CHECK_FALSE(dev->warnings().empty());
  checksum_map checksums;
  check_outcome(consume_and_check(data, spec, 1, *dev, pool.get(), checksums), spec);
}

TEST_CASE("epoch: a slow consumer lets the queue fill up to max_outstanding, never beyond",
          "[loader]") {
  const int workers = GENERATE(1, 2, 3, 4, 8);
  const int prefetch = GENERATE(1, 2);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, prefetch, pin_name);

  auto dev = host_backend();
  const loader_spec spec = make_loader_spec(workers, pin, 4, false, false, prefetch);
  const std::size_t bound = max_outstanding(spec);
  REQUIRE(bound == static_cast<std::size_t>(workers * prefetch));
  // Enough batches that the loader has more to do than it may hold.
  const dataset data(small_spec(4 * (bound + 4), 128, 0));
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());

  auto owned = std::make_unique<epoch>(data, spec, 0, *dev, pool.get());
  epoch& ep = *owned;
  std::size_t delivered = 0;
  auto first = ep.next();
  REQUIRE(first);
  CHECK(first->number == 0);
  ep.release(*first, nullptr);
  ++delivered;
  // The consumer stalls: the workers build (and pin) every batch they may, which then wait in
  // the reorder buffer. Not a timing threshold: 10 s is only the point at which a queue that
  // never fills counts as a failure. (Whether the buffer counts the batch whose turn it is
  // is left open: bound - 1 either way.)
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ep.stats().max_reorder_buffered + 1 < bound && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  CHECK(ep.stats().max_reorder_buffered + 1 >= bound);
  CHECK(ep.stats().max_outstanding_seen == bound);

  for (;;) {
    std::this_thread::sleep_for(300us);
    auto b = ep.next();
    if (!b) break;
    CHECK(b->number == delivered);
    ep.release(*b, nullptr);
    ++delivered;
  }
  CHECK(delivered == ep.batch_count());
  CHECK(delivered == data.size() / 4);
  CHECK(ep.stats().max_outstanding_seen == bound);
  CHECK(ep.stats().max_reorder_buffered <= bound);
  // The pinned memory is bounded too: one block per outstanding batch, plus the consumer's
  // (every batch here has the same size, so one size class).
  if (pin == pinning::per_batch) CHECK(pool->stats().blocks <= bound + 1);
  must_finish("destroying an epoch at its end", [&] { owned.reset(); });
}

TEST_CASE("epoch: a slow consumer with copies in flight gets the right data", "[loader]") {
  const int workers = GENERATE(1, 4);
  const pinning pin = GENERATE(pinning::off, pinning::per_batch, pinning::ring);
  const std::string pin_name(to_string(pin));
  CAPTURE(workers, pin_name);
  auto dev = host_backend();
  const dataset data(small_spec(120, 512, 1'000));
  const loader_spec spec = make_loader_spec(workers, pin, 8, /*shuffle=*/true);
  auto pool = make_pool(pin, *dev, spec, data.sample_bytes());
  checksum_map checksums;
  consumer_options slow;
  slow.delay = 500us;
  slow.compute_ns = 200'000;
  const auto out = consume_and_check(data, spec, 3, *dev, pool.get(), checksums, slow);
  check_outcome(out, spec);
  CHECK(out.stats.max_outstanding_seen >= 1);
}
