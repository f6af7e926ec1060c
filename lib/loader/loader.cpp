#include "loader/loader.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/interrupt.hpp"

namespace pinbench::loader {

std::size_t max_outstanding(const loader_spec& spec) noexcept {
  if (spec.num_workers <= 0) return 1;  // built on demand, one at a time
  return static_cast<std::size_t>(std::max(1, spec.prefetch_factor)) *
         static_cast<std::size_t>(spec.num_workers);
}

std::vector<std::vector<std::uint64_t>> epoch_batches(std::uint64_t samples,
                                                      const loader_spec& spec,
                                                      std::uint64_t epoch_number) {
  std::vector<std::uint64_t> order(samples);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  if (spec.shuffle) {
    // Fisher-Yates with a fixed engine, so that an order is the same on every platform
    // (std::shuffle's use of the engine is implementation-defined).
    std::mt19937_64 rng(spec.seed + epoch_number);
    for (std::uint64_t i = samples; i > 1; --i) {
      const std::uint64_t j = rng() % i;
      std::swap(order[i - 1], order[j]);
    }
  }
  const std::size_t per = std::max<std::size_t>(1, spec.batch_size);
  std::vector<std::vector<std::uint64_t>> out;
  for (std::uint64_t first = 0; first < samples; first += per) {
    const std::uint64_t n = std::min<std::uint64_t>(per, samples - first);
    if (n < per && spec.drop_last) break;
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                     order.begin() + static_cast<std::ptrdiff_t>(first + n));
  }
  return out;
}

namespace {

// What travels from a worker (through the pin thread) to the consumer.
struct result {
  batch b;
  std::exception_ptr error;
  std::string error_text;
};

void name_thread(std::thread& t, const std::string& name) {
  ::pthread_setname_np(t.native_handle(), name.substr(0, 15).c_str());
}

}  // namespace

struct epoch::state {
  const dataset& data;
  const loader_spec spec;
  device::backend& dev;
  pinned_pool* const pool;
  const std::vector<std::vector<std::uint64_t>> plan;
  const std::size_t bound;
  const std::size_t bytes_per_batch;

  // Pageable batch buffers, reused within the epoch.
  std::mutex buffers_mutex;
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<std::uint32_t> free_buffers;

  std::mutex mutex;  // everything below
  std::condition_variable task_cv, pin_cv, ready_cv;
  bool stop = false;
  std::vector<std::deque<std::uint64_t>> tasks;  // per worker: batch numbers to build
  std::deque<result> to_pin;
  std::map<std::uint64_t, result> ready;  // the reorder buffer, by batch number
  std::uint64_t next_task = 0;            // next batch number to dispatch
  std::size_t next_worker = 0;
  std::size_t outstanding = 0;            // dispatched and not yet handed to the consumer
  std::uint64_t next_number = 0;          // next batch the consumer receives
  std::map<std::uint32_t, pinned_lease> handed_out;  // leases the consumer holds
  epoch_stats counters;

  std::vector<std::thread> workers;
  std::thread pin_thread;

  state(const dataset& d, const loader_spec& s, std::uint64_t epoch_number, device::backend& b,
        pinned_pool* p)
      : data(d), spec(s), dev(b), pool(p), plan(epoch_batches(d.size(), s, epoch_number)),
        bound(max_outstanding(s)), bytes_per_batch(batch_bytes(s.batch_size, d.sample_bytes())) {}

  [[nodiscard]] bool threaded() const { return spec.num_workers > 0; }
  [[nodiscard]] bool pinning() const { return spec.pin_memory; }

  std::uint32_t take_buffer() {
    std::lock_guard lock(buffers_mutex);
    if (!free_buffers.empty()) {
      const auto id = free_buffers.back();
      free_buffers.pop_back();
      return id;
    }
    buffers.push_back(std::make_unique<std::byte[]>(bytes_per_batch));
    return static_cast<std::uint32_t>(buffers.size() - 1);
  }
  void give_buffer(std::uint32_t id) {
    std::lock_guard lock(buffers_mutex);
    free_buffers.push_back(id);
  }
  std::byte* buffer(std::uint32_t id) {
    std::lock_guard lock(buffers_mutex);
    return buffers[id].get();
  }

  // Builds batch `number` into a pageable buffer: every sample, then the headers in front.
  // `cancel` is polled between samples so that shutdown does not wait for a whole batch.
  batch build(std::uint64_t number, int worker, const std::atomic<bool>* cancel) {
    const auto& indices = plan[number];
    batch b;
    b.number = number;
    b.samples = indices.size();
    b.worker = worker;
    b.pageable_slot = take_buffer();
    b.data = buffer(b.pageable_slot);
    b.bytes = batch_bytes(indices.size(), data.sample_bytes());
    const std::int64_t t0 = now_ns();
    auto* headers = reinterpret_cast<sample_header*>(b.data);
    std::byte* samples = b.data + indices.size() * sizeof(sample_header);
    if (data.jpeg() != nullptr) b.costs.resize(indices.size());
    try {
      for (std::size_t j = 0; j < indices.size(); ++j) {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) break;
        sample_header h;
        data.produce(indices[j], samples + j * data.sample_bytes(), h,
                     b.costs.empty() ? nullptr : &b.costs[j]);
        std::memcpy(headers + j, &h, sizeof h);
      }
    } catch (...) {
      give_buffer(b.pageable_slot);
      throw;
    }
    b.build_ns = now_ns() - t0;
    return b;
  }

  // Copies a pageable batch into pinned memory from the pool; the pageable buffer goes back.
  void pin(batch& b) {
    const std::int64_t t0 = now_ns();
    pinned_lease lease = pool->acquire(b.bytes);
    std::memcpy(lease.data, b.data, b.bytes);
    give_buffer(b.pageable_slot);
    b.lease = lease;
    b.data = lease.data;
    b.pinned = true;
    b.pin_ns = now_ns() - t0;
  }

  // Gives back whatever storage a batch holds that no copy has read.
  void drop(batch& b) {
    if (b.pinned)
      pool->discard(b.lease);
    else if (b.data != nullptr)
      give_buffer(b.pageable_slot);
    b.data = nullptr;
  }

  // Caller holds `mutex`. Round-robin over workers, as PyTorch's index queues.
  void dispatch_locked() {
    while (outstanding < bound && next_task < plan.size()) {
      tasks[next_worker].push_back(next_task++);
      next_worker = (next_worker + 1) % tasks.size();
      ++outstanding;
      counters.max_outstanding_seen = std::max(counters.max_outstanding_seen, outstanding);
    }
    task_cv.notify_all();
  }

  void deliver(result r) {
    std::lock_guard lock(mutex);
    if (stop) {
      drop(r.b);
      return;
    }
    if (pinning() && !r.error) {
      to_pin.push_back(std::move(r));
      pin_cv.notify_one();
      return;
    }
    const auto number = r.b.number;
    ready.emplace(number, std::move(r));
    counters.max_reorder_buffered = std::max(counters.max_reorder_buffered, ready.size());
    ready_cv.notify_all();
  }

  void worker_main(int w) {
    for (;;) {
      std::uint64_t number = 0;
      {
        std::unique_lock lock(mutex);
        task_cv.wait(lock, [&] { return stop || !tasks[static_cast<std::size_t>(w)].empty(); });
        if (stop) return;
        number = tasks[static_cast<std::size_t>(w)].front();
        tasks[static_cast<std::size_t>(w)].pop_front();
      }
      result r;
      r.b.number = number;
      r.b.worker = w;
      try {
        r.b = build(number, w, &stopping);
      } catch (const std::exception& e) {
        r.error = std::current_exception();
        r.error_text = fmt::format("worker {}: {}", w, e.what());
      } catch (...) {
        r.error = std::current_exception();
        r.error_text = fmt::format("worker {}: an unknown exception", w);
      }
      deliver(std::move(r));
    }
  }

  void pin_main() {
    for (;;) {
      result r;
      {
        std::unique_lock lock(mutex);
        pin_cv.wait(lock, [&] { return stop || !to_pin.empty(); });
        if (stop) return;
        r = std::move(to_pin.front());
        to_pin.pop_front();
      }
      try {
        pin(r.b);
      } catch (const std::exception& e) {
        drop(r.b);
        r.error = std::current_exception();
        r.error_text = fmt::format("pin memory thread: {}", e.what());
      }
      std::lock_guard lock(mutex);
      if (stop) {
        drop(r.b);
        return;
      }
      const auto number = r.b.number;
      ready.emplace(number, std::move(r));
      counters.max_reorder_buffered = std::max(counters.max_reorder_buffered, ready.size());
      ready_cv.notify_all();
    }
  }

  std::atomic<bool> stopping{false};

  // Shutdown at any point: stop the threads and give back every batch they or the consumer
  // hold (giving back a ring slot may be what a waiting pin thread needs to finish).
  ~state() {
    std::vector<batch> drops;
    std::vector<pinned_lease> held;
    {
      std::lock_guard lock(mutex);
      stop = true;
      stopping.store(true);
      for (auto& [number, r] : ready) drops.push_back(std::move(r.b));
      ready.clear();
      for (auto& r : to_pin) drops.push_back(std::move(r.b));
      to_pin.clear();
      for (auto& [id, lease] : handed_out) held.push_back(lease);
      handed_out.clear();
    }
    task_cv.notify_all();
    pin_cv.notify_all();
    ready_cv.notify_all();
    for (auto& b : drops) drop(b);
    for (auto& lease : held) pool->discard(lease);
    for (auto& t : workers) t.join();
    if (pin_thread.joinable()) pin_thread.join();
  }
};

epoch::epoch(const dataset& data, const loader_spec& spec, std::uint64_t epoch_number,
             device::backend& dev, pinned_pool* pool)
    : state_(std::make_unique<state>(data, spec, epoch_number, dev, pool)) {
  auto& s = *state_;
  if (spec.batch_size == 0) throw input_error("loader: batch_size must be at least 1");
  if (spec.pin_memory && pool == nullptr)
    throw device_error("loader: pin_memory needs a pinned pool");
  data.prepare_epoch();
  if (!s.threaded()) return;

  s.tasks.resize(static_cast<std::size_t>(spec.num_workers));
  {
    std::lock_guard lock(s.mutex);
    s.dispatch_locked();
  }
  try {
    for (int w = 0; w < spec.num_workers; ++w) {
      s.workers.emplace_back([&s, w] { s.worker_main(w); });
      name_thread(s.workers.back(), fmt::format("pb-worker-{}", w));
    }
    if (spec.pin_memory) {
      s.pin_thread = std::thread([&s] { s.pin_main(); });
      name_thread(s.pin_thread, "pb-pin-memory");
    }
  } catch (...) {
    // A thread that could not be started: stop the ones that were.
    state_.reset();  // not reached in the destructor: join what runs now
    throw;
  }
}

epoch::~epoch() = default;

std::optional<batch> epoch::next() {
  auto& s = *state_;
  std::unique_lock lock(s.mutex);
  if (s.next_number >= s.plan.size()) return std::nullopt;
  const std::uint64_t number = s.next_number;

  if (!s.threaded()) {
    lock.unlock();
    throw_if_interrupted();
    batch b = s.build(number, -1, nullptr);
    if (s.pinning()) {
      try {
        s.pin(b);
      } catch (...) {
        s.drop(b);
        throw;
      }
    }
    lock.lock();
    ++s.next_number;
    ++s.counters.batches_delivered;
    s.counters.max_outstanding_seen = std::max<std::size_t>(s.counters.max_outstanding_seen, 1);
    if (b.pinned) s.handed_out.emplace(b.lease.id, b.lease);
    return b;
  }

  for (;;) {
    auto it = s.ready.find(number);
    if (it != s.ready.end()) {
      result r = std::move(it->second);
      s.ready.erase(it);
      if (r.error) {
        // Later batches are not delivered after a failed one (PyTorch re-raises and the
        // iterator is done).
        s.next_number = s.plan.size();
        throw loader_error(r.error_text);
      }
      ++s.next_number;
      ++s.counters.batches_delivered;
      --s.outstanding;
      s.dispatch_locked();
      if (r.b.pinned) s.handed_out.emplace(r.b.lease.id, r.b.lease);
      return std::move(r.b);
    }
    s.ready_cv.wait_for(lock, std::chrono::milliseconds(20));
    if (interrupt_requested()) {
      lock.unlock();
      throw_if_interrupted();
    }
  }
}

void epoch::release(batch& b, device::stream* stream) {
  auto& s = *state_;
  if (b.data == nullptr) return;
  if (b.pinned) {
    {
      std::lock_guard lock(s.mutex);
      s.handed_out.erase(b.lease.id);
    }
    if (stream != nullptr)
      s.pool->release(b.lease, *stream);
    else
      s.pool->discard(b.lease);
  } else {
    s.give_buffer(b.pageable_slot);
  }
  b.data = nullptr;
}

std::size_t epoch::batch_count() const noexcept { return state_->plan.size(); }

epoch_stats epoch::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->counters;
}

}  // namespace pinbench::loader
