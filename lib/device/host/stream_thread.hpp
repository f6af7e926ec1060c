// The host backend's streams: each is an engine thread that executes a FIFO of device
// operations (copies, synthetic compute, event records and waits, gates) strictly in order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace pinbench::device::host {

class staging_ring;

/// The state of an event, shared by its handle and by the queued operations that record or
/// wait for it, so that destroying the handle with work pending is safe (as in CUDA).
/// Each record() starts a new recording (generation 1, 2, ...); queries and waits refer to the
/// recording current when they are issued. A later recording completing also counts for an
/// earlier one: re-recording an event on another stream while a recording is pending is not
/// well defined in CUDA either.
class event_state {
 public:
  /// Starts a recording and returns its generation.
  [[nodiscard]] std::uint64_t begin_recording();
  /// Engine side: recording `generation` was reached at `timestamp_ns`.
  void complete(std::uint64_t generation, std::int64_t timestamp_ns);
  /// The current recording; 0 when never recorded.
  [[nodiscard]] std::uint64_t current() const;
  [[nodiscard]] bool is_complete(std::uint64_t generation) const;
  /// Blocks until recording `generation` completed (at once for generation 0).
  void wait_for(std::uint64_t generation);
  /// The timestamp of the current recording; nullopt when never recorded or still pending.
  [[nodiscard]] std::optional<std::int64_t> timestamp_ns() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable completed_cv_;
  std::uint64_t recorded_ = 0;
  std::uint64_t completed_ = 0;
  std::int64_t timestamp_ns_ = 0;
};

/// The flag a gate operation blocks on, for at most `timeout_ns` (as a CUDA gate kernel does).
/// A timeout of 0 is the gate-timeouts fault switch: the stream goes on at once and the gate
/// counts as timed out whether or not it was released, as a gate kernel that missed it would.
class gate_state {
 public:
  explicit gate_state(std::int64_t timeout_ns) noexcept : timeout_ns_(timeout_ns) {}
  void release() noexcept;
  void wait();
  /// True once wait() gave up before a release.
  [[nodiscard]] bool timed_out() const noexcept;

 private:
  const std::int64_t timeout_ns_;
  mutable std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
  bool timed_out_ = false;
};

/// One queued device operation. A plain record: no allocation beyond the queue's own storage.
struct op {
  enum class kind : std::uint8_t { copy, compute, record, wait, gate };

  kind what = kind::compute;
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::size_t bytes = 0;
  staging_ring* ring = nullptr;  ///< copy: a staging slot to hand back once copied
  std::size_t slot = 0;
  std::int64_t duration_ns = 0;  ///< compute
  std::uint64_t generation = 0;  ///< record, wait
  std::shared_ptr<event_state> event;
  std::shared_ptr<gate_state> gate;

  [[nodiscard]] static op copy(std::byte* dst, const std::byte* src, std::size_t bytes);
  [[nodiscard]] static op staged_copy(std::byte* dst, const std::byte* src, std::size_t bytes,
                                      staging_ring& ring, std::size_t slot);
  [[nodiscard]] static op compute(std::int64_t duration_ns);
  [[nodiscard]] static op record(std::shared_ptr<event_state> e, std::uint64_t generation);
  [[nodiscard]] static op wait(std::shared_ptr<event_state> e, std::uint64_t generation);
  [[nodiscard]] static op hold(std::shared_ptr<gate_state> g);
};

/// A FIFO of operations in a growable ring buffer: in steady state enqueueing allocates nothing.
class op_queue {
 public:
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  void push(op&& o);
  [[nodiscard]] op pop() noexcept;

 private:
  std::vector<op> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

/// A stream's engine thread. enqueue() may be called from any thread; operations run in the
/// order they were enqueued. The destructor drains the queue and joins the thread.
///
/// An operation that is quick (an event record, a wait for an event already complete, a copy
/// of at most `inline_copy_bytes`) and finds the stream idle runs in the enqueuing thread, as a
/// GPU takes it on at once: handing it to a parked engine thread would make its cost the time
/// that thread takes to wake (tens of microseconds on a loaded machine, and bimodal), which is
/// the machine's scheduler and not the transfer that is measured.
class engine {
 public:
  /// `slowdown` (0 = none; 0.2 = 20%) makes every copy and compute take that much longer: the
  /// host fault `slow=P%`, a known regression for testing a performance gate.
  explicit engine(double slowdown = 0);
  static constexpr std::size_t inline_copy_bytes = std::size_t{64} << 10;
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  void enqueue(op o);
  /// Blocks until every operation enqueued before the call has completed.
  void drain();

 private:
  void run() noexcept;
  [[nodiscard]] static bool quick(const op& o);
  void execute(op& o) const noexcept;

  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable drained_cv_;
  op_queue queue_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
  bool running_ = false;  ///< the thread is past its start-up (see the constructor)
  const double slowdown_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace pinbench::device::host
