// The host ring. Every collective runs as NCCL's ring algorithms do, over chunks: each step,
// every rank copies one chunk into its right neighbour's memory (a staging slot when the
// neighbour must reduce it, its receive buffer when it only keeps it), then all ranks meet at a
// barrier before the next step. One persistent thread per rank, so that a run costs two
// wake-ups, not N thread creations; a repeated run (one sample) runs every collective on the
// threads, a barrier between two, and wakes the caller once at the end.
#include "collective/host_ring.hpp"

#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::collective {

namespace {

/// A broadcast is pipelined in chunks of about this size down the chain from the root: small
/// enough that every link is busy at once, large enough that barriers stay cheap.
constexpr std::size_t broadcast_chunk_bytes = 256 * 1024;
constexpr std::size_t max_broadcast_chunks = 64;

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// Chunk c of a count split into n nearly equal parts; some are empty when count < n.
std::size_t chunk_begin(std::size_t count, int c, int n) {
  return count * static_cast<std::size_t>(c) / static_cast<std::size_t>(n);
}
std::size_t chunk_length(std::size_t count, int c, int n) {
  return chunk_begin(count, c + 1, n) - chunk_begin(count, c, n);
}

template <class T>
T add(T a, T b) {
  // int32 sums wrap as on a GPU (repeated in-place runs overflow) instead of being undefined.
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}

// dst = a + b, element-wise; dst may be b (same elements), never overlapping otherwise.
template <class T>
void sum_to(T* dst, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = add(a[i], b[i]);
}

template <class T>
void copy(T* dst, const T* src, std::size_t n) {
  if (n > 0 && dst != src) std::memcpy(dst, src, n * sizeof(T));
}

struct job {
  op o = op::all_reduce;
  dtype t = dtype::float32;
  buffer_shape shape;
  std::span<const rank_buffers> buffers;
  int root = 0;
  int iterations = 1;
  bool staged = false;  // send_recv: some rank runs in place, so all go through staging
};

class host_ring final : public group {
 public:
  explicit host_ring(int n) : n_(n), step_(n), staging_(static_cast<std::size_t>(n)) {
    threads_.reserve(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) threads_.emplace_back([this, r] { serve(r); });
  }

  ~host_ring() override {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    posted_.notify_all();
    for (auto& t : threads_) t.join();
  }

  host_ring(const host_ring&) = delete;
  host_ring& operator=(const host_ring&) = delete;

  [[nodiscard]] int local_count() const noexcept override { return n_; }
  [[nodiscard]] int world_size() const noexcept override { return n_; }
  [[nodiscard]] int first_rank() const noexcept override { return 0; }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("host ring, {} thread{}", n_, n_ == 1 ? "" : "s");
  }

  [[nodiscard]] std::string iteration_timing() const override {
    return "run back to back by the ring's threads and one wait for completion (nccl-tests' "
           "method)";
  }
  [[nodiscard]] std::string no_ceiling_reason() const override {
    return "the host ring copies through host memory: no device link";
  }

  void run_repeated(int iterations, op o, dtype t, const buffer_shape& shape,
                    std::span<const rank_buffers> local, int root) override {
    const std::lock_guard one_at_a_time(run_mutex_);
    if (iterations < 1)
      throw device_error(
          fmt::format("a host ring run needs 1 or more iterations, got {}", iterations));
    check(o, t, shape, local, root);
    job j{o, t, shape, local, root, iterations, false};
    if (o == op::send_recv)
      j.staged = std::any_of(local.begin(), local.end(),
                             [](const rank_buffers& b) { return b.send == b.recv; });
    reserve_staging(j);

    std::unique_lock lock(mutex_);
    job_ = j;
    remaining_ = n_;
    ++generation_;
    posted_.notify_all();
    finished_.wait(lock, [&] { return remaining_ == 0; });
  }

 private:
  // Everything a rank's thread could trip over is checked here, before any thread starts: a
  // thread that failed half-way would leave the others waiting at the barrier for ever.
  void check(op o, dtype t, const buffer_shape& shape, std::span<const rank_buffers> local,
             int root) const {
    if (static_cast<int>(local.size()) != n_)
      throw device_error(
          fmt::format("host ring of {} ranks run with {} buffer pairs", n_, local.size()));
    if (o == op::broadcast && (root < 0 || root >= n_))
      throw device_error(fmt::format("broadcast root {} is not a rank of {}", root, n_));
    if (shape.send_count == 0 && shape.recv_count == 0) return;
    for (std::size_t r = 0; r < local.size(); ++r)
      if (local[r].send == nullptr || local[r].recv == nullptr)
        throw device_error(fmt::format("rank {} has no {} buffer", r,
                                       local[r].send == nullptr ? "send" : "receive"));
    if ((o == op::all_gather &&
         shape.recv_count != shape.send_count * static_cast<std::size_t>(n_)) ||
        (o == op::reduce_scatter &&
         shape.send_count != shape.recv_count * static_cast<std::size_t>(n_)))
      throw device_error(fmt::format("{} of {} ranks needs {} blocks; shape is {} -> {} {}",
                                     to_string(o), n_, n_, shape.send_count, shape.recv_count,
                                     to_string(t)));
  }

  struct staging {
    std::vector<std::byte> slot[2];  // what the left neighbour copied in, by step parity
    std::vector<std::byte> acc;      // reduce_scatter's running partial sum
  };

  // Sized before the threads run (never inside a step); kept between runs.
  void reserve_staging(const job& j) {
    const std::size_t elem = size_of(j.t);
    std::size_t slot = 0, acc = 0;
    switch (j.o) {
      case op::all_reduce:
        slot =
            (j.shape.send_count + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
        break;
      case op::reduce_scatter:
        slot = acc = j.shape.recv_count;
        break;
      case op::send_recv:
        slot = j.staged ? j.shape.send_count : 0;
        break;
      case op::all_gather:
      case op::broadcast:
        break;
    }
    for (auto& s : staging_) {
      for (auto& b : s.slot)
        if (b.size() < slot * elem) b.resize(slot * elem);
      if (s.acc.size() < acc * elem) s.acc.resize(acc * elem);
    }
  }

  void serve(int rank) {
    std::uint64_t seen = 0;
    for (;;) {
      job j;
      {
        std::unique_lock lock(mutex_);
        posted_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        j = job_;
      }
      for (int i = 0; i < j.iterations; ++i) {
        // A rank must not write into its neighbour's buffers or staging for the next
        // collective while the neighbour still reads them for this one.
        if (i > 0 && n_ > 1) next_step();
        switch (j.t) {
          case dtype::float32:
            execute<float>(rank, j);
            break;
          case dtype::float64:
            execute<double>(rank, j);
            break;
          case dtype::int32:
            execute<std::int32_t>(rank, j);
            break;
        }
      }
      const std::lock_guard lock(mutex_);
      if (--remaining_ == 0) finished_.notify_one();
    }
  }

  template <class T>
  T* slot_of(int rank, int step) {
    return reinterpret_cast<T*>(staging_[static_cast<std::size_t>(rank)].slot[step & 1].data());
  }
  template <class T>
  T* acc_of(int rank) {
    return reinterpret_cast<T*>(staging_[static_cast<std::size_t>(rank)].acc.data());
  }
  template <class T>
  static T* send_of(const job& j, int rank) {
    return static_cast<T*>(j.buffers[static_cast<std::size_t>(rank)].send);
  }
  template <class T>
  static T* recv_of(const job& j, int rank) {
    return static_cast<T*>(j.buffers[static_cast<std::size_t>(rank)].recv);
  }

  void next_step() { step_.arrive_and_wait(); }

  template <class T>
  void execute(int r, const job& j) {
    switch (j.o) {
      case op::all_reduce:
        all_reduce<T>(r, j);
        break;
      case op::all_gather:
        all_gather<T>(r, j);
        break;
      case op::reduce_scatter:
        reduce_scatter<T>(r, j);
        break;
      case op::broadcast:
        broadcast<T>(r, j);
        break;
      case op::send_recv:
        send_recv<T>(r, j);
        break;
    }
  }

  // Reduce-scatter then all-gather over n chunks: 2(n-1) steps. After the first half, rank r
  // holds the complete sum of chunk r+1.
  template <class T>
  void all_reduce(int r, const job& j) {
    const std::size_t count = j.shape.send_count;
    T* recv = recv_of<T>(j, r);
    copy(recv, send_of<T>(j, r), count);
    if (n_ == 1) return;
    const int right = mod(r + 1, n_);
    for (int s = 0; s < n_ - 1; ++s) {
      const int out = mod(r - s, n_);
      copy(slot_of<T>(right, s), recv + chunk_begin(count, out, n_), chunk_length(count, out, n_));
      next_step();
      const int in = mod(r - 1 - s, n_);
      T* mine = recv + chunk_begin(count, in, n_);
      sum_to(mine, slot_of<T>(r, s), mine, chunk_length(count, in, n_));
    }
    next_step();  // every chunk complete before the neighbours write into this buffer
    T* right_recv = recv_of<T>(j, right);
    for (int s = 0; s < n_ - 1; ++s) {
      const int c = mod(r + 1 - s, n_);
      const std::size_t at = chunk_begin(count, c, n_);
      copy(right_recv + at, recv + at, chunk_length(count, c, n_));
      next_step();
    }
  }

  // n-1 steps, each passing on the block received in the step before, starting with its own.
  template <class T>
  void all_gather(int r, const job& j) {
    const std::size_t block = j.shape.send_count;
    T* recv = recv_of<T>(j, r);
    T* mine = recv + block * static_cast<std::size_t>(r);
    const T* send = send_of<T>(j, r);
    if (send != recv) copy(mine, send, block);  // in place (send == recv): block r holds it
    if (n_ == 1) return;
    T* right_recv = recv_of<T>(j, mod(r + 1, n_));
    for (int s = 0; s < n_ - 1; ++s) {
      const std::size_t at = block * static_cast<std::size_t>(mod(r - s, n_));
      copy(right_recv + at, recv + at, block);
      next_step();
    }
  }

  // n-1 steps of "pass the partial sum on, add my own block to the one that arrives"; after the
  // last, rank r holds the complete sum of block r. In place, it lands at block r of the buffer.
  template <class T>
  void reduce_scatter(int r, const job& j) {
    const std::size_t block = j.shape.recv_count;
    const T* send = send_of<T>(j, r);
    T* out =
        j.buffers[static_cast<std::size_t>(r)].send == j.buffers[static_cast<std::size_t>(r)].recv
            ? send_of<T>(j, r) + block * static_cast<std::size_t>(r)
            : recv_of<T>(j, r);
    if (n_ == 1) {
      copy(out, send, block);
      return;
    }
    const int right = mod(r + 1, n_);
    T* acc = acc_of<T>(r);
    for (int s = 0; s < n_ - 1; ++s) {
      const T* partial = s == 0 ? send + block * static_cast<std::size_t>(mod(r - 1, n_)) : acc;
      copy(slot_of<T>(right, s), partial, block);
      next_step();
      const T* own = send + block * static_cast<std::size_t>(mod(r - 2 - s, n_));
      sum_to(s == n_ - 2 ? out : acc, slot_of<T>(r, s), own, block);
    }
  }

  // A chain from the root, pipelined: chunk k leaves position p at step k + p, so every link
  // carries a chunk at once once the pipe is full.
  template <class T>
  void broadcast(int r, const job& j) {
    const std::size_t count = j.shape.send_count;
    const bool is_root = r == j.root;
    if (is_root) copy(recv_of<T>(j, r), send_of<T>(j, r), count);
    if (n_ == 1) return;
    const std::size_t bytes = count * sizeof(T);
    const int chunks = static_cast<int>(std::clamp<std::size_t>(
        (bytes + broadcast_chunk_bytes - 1) / broadcast_chunk_bytes, 1,
        std::min<std::size_t>(max_broadcast_chunks, std::max<std::size_t>(count, 1))));
    const int position = mod(r - j.root, n_);
    const T* from = is_root ? send_of<T>(j, r) : recv_of<T>(j, r);
    T* right_recv = recv_of<T>(j, mod(r + 1, n_));
    for (int t = 0; t < chunks + n_ - 2; ++t) {
      const int k = t - position;
      if (position < n_ - 1 && k >= 0 && k < chunks) {
        const std::size_t at = chunk_begin(count, k, chunks);
        copy(right_recv + at, from + at, chunk_length(count, k, chunks));
      }
      next_step();
    }
  }

  // Pairs 0<->1, 2<->3, ...; an odd last rank sends to itself. Out of place, each rank writes
  // straight into its peer's receive buffer; in place, through the peer's staging slot.
  template <class T>
  void send_recv(int r, const job& j) {
    const std::size_t count = j.shape.send_count;
    const int peer = (r ^ 1) < n_ ? (r ^ 1) : r;
    if (!j.staged) {
      copy(recv_of<T>(j, peer), send_of<T>(j, r), count);
      return;
    }
    copy(slot_of<T>(peer, 0), send_of<T>(j, r), count);
    if (n_ > 1) next_step();
    copy(recv_of<T>(j, r), slot_of<T>(r, 0), count);
  }

  const int n_;
  std::barrier<> step_;
  std::vector<staging> staging_;

  std::mutex run_mutex_;  // one collective at a time
  std::mutex mutex_;
  std::condition_variable posted_, finished_;
  job job_;
  std::uint64_t generation_ = 0;
  int remaining_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<group> make_host_ring(int participants) {
  if (participants < 1)
    throw device_error(fmt::format("a host ring needs at least 1 rank, got {}", participants));
  return std::make_unique<host_ring>(participants);
}

}  // namespace pinbench::collective
