#include "loader/loader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/interrupt.hpp"
#include "core/units.hpp"
#include "loader/jpeg_source.hpp"

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

void collate_batch(const dataset& data, const std::vector<std::uint64_t>& indices, std::byte* out,
                   sample_cost* costs, const std::atomic<bool>* cancel) {
  auto* headers = reinterpret_cast<sample_header*>(out);
  std::byte* samples = out + indices.size() * sizeof(sample_header);
  const auto cancelled = [cancel] {
    return cancel != nullptr && cancel->load(std::memory_order_relaxed);
  };
  const std::int64_t hang_at = data.spec().hang_at_sample;
  for (std::size_t j = 0; j < indices.size(); ++j) {
    if (cancelled()) break;
    if (hang_at >= 0 && indices[j] == static_cast<std::uint64_t>(hang_at)) {
      // The injected hang: alive and stuck. A worker thread leaves at shutdown (cancel), a
      // worker process when it is killed, the main thread (no workers) at Ctrl-C.
      while (!cancelled()) {
        throw_if_interrupted();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      break;
    }
    sample_header h;
    data.produce(indices[j], samples + j * data.sample_bytes(), h,
                 costs == nullptr ? nullptr : costs + j);
    std::memcpy(headers + j, &h, sizeof h);
  }
}

namespace {

// How long the consumer spins for a batch before it parks (see epoch::next).
constexpr std::int64_t consumer_spin_ns = 30'000;

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
  const std::uint64_t epoch_number;  // process workers: tasks carry it, replies are matched to it

  // Pageable batch buffers, reused within the epoch.
  std::mutex buffers_mutex;
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<std::uint32_t> free_buffers;

  std::mutex mutex;  // everything below
  std::condition_variable pin_cv, ready_cv;
  // Counts what may end the consumer's wait (a batch ready, a fatal end, stop): it spins on
  // this before it parks on ready_cv. Changed under `mutex` only.
  std::atomic<std::uint64_t> arrivals{0};
  bool stop = false;
  std::vector<std::deque<std::uint64_t>> tasks;  // per worker: batch numbers to build
  // One per worker: a task wakes the worker it is for, not every worker (on few cores the
  // others' wake-ups would take the CPU the batches need).
  std::unique_ptr<std::condition_variable[]> task_cvs;
  std::deque<result> to_pin;
  std::map<std::uint64_t, result> ready;  // the reorder buffer, by batch number
  std::uint64_t next_task = 0;            // next batch number to dispatch
  std::size_t next_worker = 0;
  std::size_t outstanding = 0;    // dispatched and not yet handed to the consumer
  std::uint64_t next_number = 0;  // next batch the consumer receives
  std::map<std::uint32_t, pinned_lease> handed_out;  // leases the consumer holds
  epoch_stats counters;

  std::vector<std::thread> workers;
  std::thread pin_thread;

  state(const dataset& d, const loader_spec& s, std::uint64_t number, device::backend& b,
        pinned_pool* p)
      : data(d),
        spec(s),
        dev(b),
        pool(p),
        plan(epoch_batches(d.size(), s, number)),
        bound(max_outstanding(s)),
        bytes_per_batch(batch_bytes(s.batch_size, d.sample_bytes())),
        epoch_number(number) {}

  [[nodiscard]] bool threaded() const { return spec.num_workers > 0; }
  [[nodiscard]] bool pinning() const { return spec.pin_memory; }

  std::uint32_t take_buffer() {
    std::lock_guard lock(buffers_mutex);
    if (!free_buffers.empty()) {
      const auto id = free_buffers.back();
      free_buffers.pop_back();
      return id;
    }
    // Not zeroed: collate writes every byte a batch carries, and zeroing a fresh 8 MiB buffer
    // is milliseconds of first-touch faults in the first batch of every epoch.
    buffers.push_back(std::make_unique_for_overwrite<std::byte[]>(bytes_per_batch));
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
    if (data.jpeg() != nullptr) b.costs.resize(indices.size());
    try {
      collate_batch(data, indices, b.data, b.costs.empty() ? nullptr : b.costs.data(), cancel);
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
    b.pin_ns = now_ns() - t0;  // the copy; giving back a segment is the IPC's cost, not the pin's
    give_storage(b);
    b.lease = lease;
    b.data = lease.data;
    b.pinned = true;
  }

  // Gives back whatever storage a batch holds that no copy has read.
  void drop(batch& b) {
    if (b.pinned)
      pool->discard(b.lease);
    else if (b.data != nullptr)
      give_storage(b);
    b.data = nullptr;
  }

  // The unpinned storage a batch holds: its pageable buffer, or its worker's segment.
  void give_storage(batch& b) {
    if (b.mapped_bytes == 0) {
      give_buffer(b.pageable_slot);
      return;
    }
    unmap_segment(b.data, b.mapped_bytes);
    shm_mapped.fetch_sub(b.mapped_bytes);
    b.mapped_bytes = 0;
  }

  // The thread workers that were given tasks: `count` of them from `first`, round-robin.
  struct given {
    std::size_t first = 0, count = 0;
  };

  // Caller holds `mutex`. Round-robin over workers, as PyTorch's index queues; a process
  // worker is sent its task at once (its socket holds them in order). Thread workers are woken
  // by wake_workers() once the caller let go of `mutex`: woken under it, they would block on it.
  [[nodiscard]] given dispatch_locked() {
    given g{next_worker, 0};
    while (outstanding < bound && next_task < plan.size()) {
      if (procs != nullptr) {
        const int w = static_cast<int>(next_worker);
        if (!procs->send_task(w, epoch_number, next_task) && !fatal)
          fatal = fmt::format("worker {} (pid {}) is gone", w, procs->pid(w));
        ++sent[next_worker];
        ++next_task;
      } else {
        tasks[next_worker].push_back(next_task++);
        ++g.count;
      }
      next_worker = (next_worker + 1) % tasks.size();
      ++outstanding;
      counters.max_outstanding_seen = std::max(counters.max_outstanding_seen, outstanding);
    }
    return g;
  }

  void wake_workers(given g) {
    const std::size_t n = tasks.size();
    for (std::size_t i = 0; i < std::min(g.count, n); ++i) task_cvs[(g.first + i) % n].notify_one();
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
    announce_locked();
  }

  // Caller holds `mutex`: the consumer has something to look at.
  void announce_locked() {
    arrivals.fetch_add(1, std::memory_order_release);
    ready_cv.notify_all();
  }

  // Caller holds `mutex`: one more worker is up at `at_ns`.
  void worker_up_locked(std::int64_t at_ns) {
    last_up_ns = std::max(last_up_ns, at_ns);
    if (++workers_up == spec.num_workers) counters.worker_startup_ns = last_up_ns - start_ns;
  }

  void worker_main(int w) {
    {
      const std::int64_t at = now_ns();
      std::lock_guard lock(mutex);
      worker_up_locked(at);
    }
    for (;;) {
      std::uint64_t number = 0;
      {
        const auto me = static_cast<std::size_t>(w);
        std::unique_lock lock(mutex);
        task_cvs[me].wait(lock, [&] { return stop || !tasks[me].empty(); });
        if (stop) return;
        number = tasks[me].front();
        tasks[me].pop_front();
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

  // Process workers: one thread receives from every worker's socket, maps each batch's segment
  // and hands it on as a worker thread would; a worker's error travels as the batch's error, a
  // worker's end fails the epoch (fatal) with how it ended.
  void reader_main() {
    const int n = procs->count();
    std::vector<pollfd> fds(static_cast<std::size_t>(n) + 1);
    for (int w = 0; w < n; ++w) fds[static_cast<std::size_t>(w)] = {procs->socket(w), POLLIN, 0};
    fds.back() = {wake[0], POLLIN, 0};
    for (;;) {
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds.back().revents != 0) return;
      for (int w = 0; w < n; ++w) {
        auto& p = fds[static_cast<std::size_t>(w)];
        if (p.fd < 0 || p.revents == 0) continue;
        if (!take_message(procs->receive(w))) p.fd = -1;  // gone: no more from this one
      }
    }
  }

  // One message from a worker; false when the worker is gone.
  bool take_message(worker_message m) {
    using kind = worker_message::kind;
    if (m.what == kind::ready) {
      std::lock_guard lock(mutex);
      worker_up_locked(m.sent_at_ns);
      return true;
    }
    if (m.what == kind::gone) {
      std::lock_guard lock(mutex);
      if (!fatal)
        fatal = fmt::format("worker {} (pid {}) {}", m.worker, procs->pid(m.worker), m.text);
      announce_locked();
      return false;
    }
    {
      std::lock_guard lock(mutex);
      ++received[static_cast<std::size_t>(m.worker)];
    }
    if (m.epoch != epoch_number) {  // an earlier epoch's, left by a persistent worker
      unmap_segment(m.mapping, m.mapped_bytes);
      return true;
    }
    result r;
    r.b.number = m.number;
    r.b.worker = m.worker;
    if (m.what == kind::error) {
      r.error_text = fmt::format("worker {}: {}", m.worker, m.text);
      r.error = std::make_exception_ptr(loader_error(r.error_text));
      deliver(std::move(r));
      return true;
    }
    r.b.ipc_ns = now_ns() - m.sent_at_ns;
    r.b.samples = m.samples;
    r.b.bytes = m.bytes;
    r.b.data = m.mapping;
    r.b.mapped_bytes = m.mapped_bytes;
    r.b.build_ns = m.build_ns;
    if (data.jpeg() != nullptr) {
      const auto* costs = reinterpret_cast<const sample_cost*>(m.mapping + m.bytes);
      r.b.costs.assign(costs, costs + m.samples);
      for (std::size_t j = 0; j < m.samples; ++j)
        if (r.b.costs[j].skipped) data.jpeg()->count_skip_in_worker(r.b.headers()[j].index);
    }
    const std::uint64_t now_mapped = shm_mapped.fetch_add(m.mapped_bytes) + m.mapped_bytes;
    std::uint64_t peak = shm_peak.load();
    while (now_mapped > peak && !shm_peak.compare_exchange_weak(peak, now_mapped)) {
    }
    deliver(std::move(r));
    return true;
  }

  // A persistent pool at the end of an epoch: the batches still coming for it are received
  // and dropped, so that the next epoch starts with idle workers. False when that cannot be
  // done in a bounded time (the pool is then not reused).
  bool drain() {
    for (int w = 0; w < procs->count(); ++w) {
      const auto i = static_cast<std::size_t>(w);
      while (received[i] < sent[i]) {
        pollfd p{procs->socket(w), POLLIN, 0};
        if (::poll(&p, 1, 10'000) <= 0) return false;
        worker_message m = procs->receive(w);
        if (m.what == worker_message::kind::gone) return false;
        if (m.what == worker_message::kind::ready) continue;
        unmap_segment(m.mapping, m.mapped_bytes);
        ++received[i];
      }
    }
    return true;
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
      announce_locked();
    }
  }

  std::atomic<bool> stopping{false};

  // Workers' start-up (both methods).
  std::int64_t start_ns = 0, last_up_ns = 0;
  int workers_up = 0;
  // Process workers: the pool (owned, or kept across epochs), the reader thread and the pipe
  // that wakes it to stop, tasks sent and replies received per worker, segments mapped here.
  std::unique_ptr<process_workers> own_procs;
  kept_workers* kept = nullptr;
  process_workers* procs = nullptr;
  std::thread reader;
  int wake[2] = {-1, -1};
  std::vector<std::uint64_t> sent, received;
  std::optional<std::string> fatal;  // under `mutex`
  std::atomic<std::uint64_t> shm_mapped{0}, shm_peak{0};

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
      arrivals.fetch_add(1, std::memory_order_release);
    }
    for (std::size_t w = 0; w < tasks.size(); ++w) task_cvs[w].notify_all();
    pin_cv.notify_all();
    ready_cv.notify_all();
    for (auto& b : drops) drop(b);
    for (auto& lease : held) pool->discard(lease);
    if (reader.joinable()) {
      const char one = 1;
      (void)!::write(wake[1], &one, 1);
      reader.join();
    }
    for (auto& t : workers) t.join();
    if (pin_thread.joinable()) pin_thread.join();
    // What the pin thread or the reader delivered while stopping.
    for (auto& [number, r] : ready) drop(r.b);
    for (auto& r : to_pin) drop(r.b);
    stop_processes();
    for (int& fd : wake)
      if (fd >= 0) ::close(fd);
  }

  // Own workers stop with the epoch; kept ones stay when they are idle and whole.
  void stop_processes() noexcept {
    if (procs == nullptr) return;
    if (kept != nullptr && kept->pool.get() == procs) {
      bool reusable = !fatal && !procs->broken() && !interrupt_requested();
      try {
        reusable = reusable && drain();
      } catch (...) {
        reusable = false;
      }
      if (!reusable) kept->pool.reset();
    }
    own_procs.reset();
    procs = nullptr;
  }
};

epoch::epoch(const dataset& data, const loader_spec& spec, std::uint64_t epoch_number,
             device::backend& dev, pinned_pool* pool, kept_workers* kept)
    : state_(std::make_unique<state>(data, spec, epoch_number, dev, pool)) {
  auto& s = *state_;
  if (spec.batch_size == 0) throw input_error("loader: batch_size must be at least 1");
  if (spec.pin_memory && pool == nullptr)
    throw device_error("loader: pin_memory needs a pinned pool");
  data.prepare_epoch();
  if (!s.threaded()) return;

  const auto n = static_cast<std::size_t>(spec.num_workers);
  s.tasks.resize(n);
  s.task_cvs = std::make_unique<std::condition_variable[]>(n);
  s.start_ns = now_ns();
  try {
    if (spec.method == worker_method::process) {
      // Workers are forked before this epoch's threads start (reader, pin thread).
      const bool keep = spec.persistent_workers && kept != nullptr;
      if (keep && kept->pool && kept->pool->count() == spec.num_workers && !kept->pool->broken()) {
        s.procs = kept->pool.get();
        s.workers_up = spec.num_workers;  // started in an earlier epoch
      } else {
        auto started = std::make_unique<process_workers>(data, spec, spec.num_workers);
        s.start_ns = started->started_at_ns();
        s.counters.worker_starts = 1;
        if (keep) {
          kept->pool = std::move(started);
          s.procs = kept->pool.get();
        } else {
          s.own_procs = std::move(started);
          s.procs = s.own_procs.get();
        }
      }
      s.kept = keep ? kept : nullptr;
      s.sent.assign(n, 0);
      s.received.assign(n, 0);
      if (::pipe2(s.wake, O_CLOEXEC) != 0)
        throw environment_error(fmt::format("loader: pipe: {}", std::strerror(errno)));
    } else {
      s.counters.worker_starts = 1;
    }
    {
      std::lock_guard lock(s.mutex);
      // No wake-up to send: the workers, started below, find their first tasks waiting.
      static_cast<void>(s.dispatch_locked());
    }
    if (s.procs != nullptr) {
      s.reader = std::thread([&s] { s.reader_main(); });
      name_thread(s.reader, "pb-worker-recv");
    } else {
      for (int w = 0; w < spec.num_workers; ++w) {
        s.workers.emplace_back([&s, w] { s.worker_main(w); });
        name_thread(s.workers.back(), fmt::format("pb-worker-{}", w));
      }
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

  const std::int64_t wait_start = s.spec.timeout_ns > 0 ? now_ns() : 0;
  for (;;) {
    if (s.fatal && s.ready.find(number) == s.ready.end()) {
      s.next_number = s.plan.size();
      throw loader_error(*s.fatal);
    }
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
      const auto to_wake = s.dispatch_locked();
      if (r.b.pinned) s.handed_out.emplace(r.b.lease.id, r.b.lease);
      lock.unlock();
      s.wake_workers(to_wake);
      return std::move(r.b);
    }
    // Spin a little before parking, as a CUDA host thread spins before it blocks: with cheap
    // batches the next is microseconds away, and waking a parked thread costs more than that
    // (tens of microseconds, and bimodal, on a loaded machine).
    const std::uint64_t seen = s.arrivals.load(std::memory_order_relaxed);
    lock.unlock();
    const std::int64_t spin_end = now_ns() + consumer_spin_ns;
    while (s.arrivals.load(std::memory_order_acquire) == seen && now_ns() < spin_end) spin_pause();
    lock.lock();
    if (s.arrivals.load(std::memory_order_relaxed) == seen)
      s.ready_cv.wait_for(lock, std::chrono::milliseconds(20));
    if (interrupt_requested()) {
      lock.unlock();
      throw_if_interrupted();
    }
    if (s.spec.timeout_ns > 0 && s.ready.find(number) == s.ready.end() &&
        now_ns() - wait_start > s.spec.timeout_ns) {
      s.next_number = s.plan.size();
      // Batches go to the workers in turn: batch n is worker n % num_workers's.
      const int w = static_cast<int>(number % static_cast<std::uint64_t>(s.spec.num_workers));
      std::string who = fmt::format("worker {}", w);
      if (s.procs != nullptr) {
        who += fmt::format(" (pid {})", s.procs->pid(w));
        s.procs->mark_broken();  // a stuck worker is not kept for the next epoch
      }
      throw loader_error(fmt::format(
          "timed out after {}: {} is alive but has not delivered batch {} of the epoch (the "
          "DataLoader timeout)",
          format_duration_ns(static_cast<double>(s.spec.timeout_ns)), who, number));
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
    s.give_storage(b);
  }
  b.data = nullptr;
}

std::size_t epoch::batch_count() const noexcept {
  return state_->plan.size();
}

epoch_stats epoch::stats() const {
  std::lock_guard lock(state_->mutex);
  epoch_stats st = state_->counters;
  st.peak_shm_bytes = state_->shm_peak.load();
  return st;
}

std::vector<process_memory> epoch::worker_memory() const {
  return state_->procs != nullptr ? state_->procs->memory() : std::vector<process_memory>{};
}

}  // namespace pinbench::loader
