#include "device/host/stream_thread.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <shared_mutex>
#include <utility>

#include "core/clock.hpp"
#include "device/host/staging_ring.hpp"

namespace pinbench::device::host {

// ---- event_state ------------------------------------------------------------------------------

std::uint64_t event_state::begin_recording() {
  std::lock_guard lock(mutex_);
  return ++recorded_;
}

void event_state::complete(std::uint64_t generation, std::int64_t timestamp_ns) {
  {
    std::lock_guard lock(mutex_);
    if (generation <= completed_) return;  // a later recording already completed
    completed_ = generation;
    timestamp_ns_ = timestamp_ns;
  }
  completed_cv_.notify_all();
}

std::uint64_t event_state::current() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

bool event_state::is_complete(std::uint64_t generation) const {
  std::lock_guard lock(mutex_);
  return completed_ >= generation;
}

void event_state::wait_for(std::uint64_t generation) {
  std::unique_lock lock(mutex_);
  completed_cv_.wait(lock, [&] { return completed_ >= generation; });
}

std::optional<std::int64_t> event_state::timestamp_ns() const {
  std::lock_guard lock(mutex_);
  if (recorded_ == 0 || completed_ < recorded_) return std::nullopt;
  return timestamp_ns_;
}

// ---- gate_state -------------------------------------------------------------------------------

void gate_state::release() noexcept {
  {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  released_cv_.notify_all();
}

void gate_state::wait() {
  std::unique_lock lock(mutex_);
  if (timeout_ns_ == 0) {  // the fault switch: behave as a gate kernel that was never released
    timed_out_ = true;
    return;
  }
  if (!released_cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns_),
                             [&] { return released_; }))
    timed_out_ = true;
}

bool gate_state::timed_out() const noexcept {
  std::lock_guard lock(mutex_);
  return timed_out_;
}

// ---- op ---------------------------------------------------------------------------------------

op op::copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  op o;
  o.what = kind::copy;
  o.dst = dst;
  o.src = src;
  o.bytes = bytes;
  return o;
}

op op::staged_copy(std::byte* dst, const std::byte* src, std::size_t bytes, staging_ring& ring,
                   std::size_t slot) {
  op o = copy(dst, src, bytes);
  o.ring = &ring;
  o.slot = slot;
  return o;
}

op op::compute(std::int64_t duration_ns) {
  op o;
  o.what = kind::compute;
  o.duration_ns = duration_ns;
  return o;
}

op op::record(std::shared_ptr<event_state> e, std::uint64_t generation) {
  op o;
  o.what = kind::record;
  o.event = std::move(e);
  o.generation = generation;
  return o;
}

op op::wait(std::shared_ptr<event_state> e, std::uint64_t generation) {
  op o = record(std::move(e), generation);
  o.what = kind::wait;
  return o;
}

op op::hold(std::shared_ptr<gate_state> g) {
  op o;
  o.what = kind::gate;
  o.gate = std::move(g);
  return o;
}

// ---- op_queue ---------------------------------------------------------------------------------

void op_queue::push(op&& o) {
  if (size_ == slots_.size()) {
    std::vector<op> grown(std::max<std::size_t>(16, slots_.size() * 2));
    for (std::size_t i = 0; i < size_; ++i)
      grown[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(grown);
    head_ = 0;
  }
  slots_[(head_ + size_) % slots_.size()] = std::move(o);
  ++size_;
}

op op_queue::pop() noexcept {
  op o = std::move(slots_[head_]);
  head_ = (head_ + 1) % slots_.size();
  --size_;
  return o;
}

// ---- engine -----------------------------------------------------------------------------------

namespace {

// Loader worker processes are forked while engine threads run. An engine thread inside the
// allocator at that instant would leave the allocator's lock held in the child for good, and the
// child's first allocation would wait forever (glibc's malloc guards itself around fork; the
// allocator of clang 14's AddressSanitizer does not: seen as a worker stuck in its first
// allocation). An engine frees only where it drops a finished operation's references, so it
// does that under this lock, which fork() takes first through pthread_atfork.
std::shared_mutex& fork_lock() {
  static std::shared_mutex lock;
  return lock;
}

void guard_forks() {
  static const bool registered = [] {
    ::pthread_atfork([] { fork_lock().lock(); }, [] { fork_lock().unlock(); },
                     [] { fork_lock().unlock(); });
    return true;
  }();
  static_cast<void>(registered);
}

}  // namespace

engine::engine(double slowdown) : slowdown_(slowdown), thread_([this] { run(); }) {
  ::pthread_setname_np(thread_.native_handle(), "pinbench-stream");
  // A thread's start-up allocates (its thread-local storage; a sanitizer's bookkeeping): a fork
  // in the middle of it leaves the child with the allocator locked, as above. A stream exists
  // once its thread is past that, so a loader that forks after creating streams is safe.
  std::unique_lock lock(mutex_);
  drained_cv_.wait(lock, [&] { return running_; });
}

engine::~engine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  thread_.join();  // run() finishes everything queued before it returns
}

bool engine::quick(const op& o) {
  switch (o.what) {
    case op::kind::record:
      return true;
    case op::kind::copy:
      return o.bytes <= inline_copy_bytes;
    case op::kind::wait:
      return o.event->is_complete(o.generation);
    case op::kind::compute:
    case op::kind::gate:
      return false;
  }
  return false;
}

void engine::enqueue(op o) {
  {
    std::unique_lock lock(mutex_);
    // A quick operation on an idle stream runs here and now, under the lock, so that nothing
    // enqueued meanwhile can overtake it. An event recorded so is stamped when the stream
    // reached it, which keeps thread scheduling delay out of event timings (on a busy machine
    // that delay would shorten every measured span).
    if (queue_.empty() && completed_ == enqueued_ && quick(o)) {
      ++enqueued_;
      execute(o);
      ++completed_;
      lock.unlock();
      o = op{};  // drop event references outside the lock, as run() does
      drained_cv_.notify_all();
      return;
    }
    queue_.push(std::move(o));
    ++enqueued_;
  }
  work_cv_.notify_one();
}

void engine::drain() {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = enqueued_;
  drained_cv_.wait(lock, [&] { return completed_ >= target; });
}

void engine::run() noexcept {
  guard_forks();
  std::unique_lock lock(mutex_);
  running_ = true;
  drained_cv_.notify_all();
  for (;;) {
    work_cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and nothing left to do
    op current = queue_.pop();
    lock.unlock();
    execute(current);
    {
      // Drop event/gate references outside the engine's lock, and never across a fork.
      const std::shared_lock no_fork(fork_lock());
      current = op{};
    }
    lock.lock();
    ++completed_;
    drained_cv_.notify_all();
  }
}

void engine::execute(op& o) const noexcept {
  switch (o.what) {
    case op::kind::copy: {
      const std::int64_t start = slowdown_ > 0 ? now_ns() : 0;
      std::memcpy(o.dst, o.src, o.bytes);
      // The slow fault stretches the copy as a slower link would: the stream stays busy.
      if (slowdown_ > 0)
        occupy_for_ns(static_cast<std::int64_t>(static_cast<double>(now_ns() - start) * slowdown_));
      if (o.ring != nullptr) o.ring->hand_back(o.slot);
      break;
    }
    case op::kind::compute:
      // Device work keeps its stream busy for the duration, but a GPU kernel takes no host
      // CPU: sleep through most of it and spin only the end, for a precise finish, so that
      // emulated compute does not steal a core from the host work it overlaps (loader workers).
      occupy_for_ns(
          static_cast<std::int64_t>(static_cast<double>(o.duration_ns) * (1 + slowdown_)));
      break;
    case op::kind::record:
      o.event->complete(o.generation, now_ns());
      break;
    case op::kind::wait:
      o.event->wait_for(o.generation);
      break;
    case op::kind::gate:
      o.gate->wait();
      break;
  }
}

}  // namespace pinbench::device::host
