// The loader's worker processes, as PyTorch's DataLoader runs them (worker_method: process):
// each worker is a forked copy of this process that builds whole batches with the same dataset
// code, collates each into its own shared-memory segment (shm_open in /dev/shm, unlinked at
// once) and sends the segment's descriptor over a Unix socket (SCM_RIGHTS) with a small header
// in place of PyTorch's pickle. The main process maps the segment: that is the batch.
//
// Why fork: PyTorch's default start method on Linux, and the one whose costs users meet (the
// dataset's pages shared copy-on-write, then duplicated as workers touch them). A worker only
// runs the dataset's code, glibc's malloc (fork-safe) and the socket: never a lock another
// thread of the parent could have held at the fork, nor the device.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/dataset.hpp"

namespace pinbench::loader {

struct loader_spec;

/// Resident and proportional set size of one process, from /proc/PID/smaps_rollup.
struct process_memory {
  pid_t pid = 0;
  std::uint64_t rss_bytes = 0;
  std::uint64_t pss_bytes = 0;
};

/// The memory of process `pid` (0: this process), or nullopt where smaps_rollup is unreadable
/// (kernels before 4.14, a process that is gone).
[[nodiscard]] std::optional<process_memory> read_process_memory(pid_t pid = 0);

/// What a worker sent: a batch (its segment mapped here), a worker's error, or its end.
struct worker_message {
  enum class kind { ready, batch, error, gone } what = kind::gone;
  int worker = -1;
  std::uint64_t epoch = 0;   ///< the epoch the task belonged to
  std::uint64_t number = 0;  ///< batch number in that epoch
  std::size_t samples = 0;
  std::size_t bytes = 0;         ///< the batch (headers, then samples)
  std::byte* mapping = nullptr;  ///< the segment, mapped read-write here (batch, then costs)
  std::size_t mapped_bytes = 0;
  std::int64_t build_ns = 0;
  std::int64_t sent_at_ns = 0;  ///< now_ns() in the worker when the batch (or hello) was ready
  std::string text;             ///< error: the worker's message; gone: how it ended
};

/// The bytes of one batch's segment: the batch, then one sample_cost per sample (jpeg).
[[nodiscard]] std::size_t segment_bytes(const loader_spec& spec, const dataset& data) noexcept;

/// `/dev/shm` free space against the segments that can be in flight at once; throws
/// environment_error naming the size needed when it is too small.
void check_shared_memory(const loader_spec& spec, const dataset& data);

/// A pool of worker processes. Started by the constructor (each forks and says it is ready),
/// stopped by the destructor at any point: the sockets close, idle workers exit, busy ones are
/// killed after a short grace, every one is reaped. Used from one thread at a time, except
/// memory(), which another thread may call while that one receives.
class process_workers {
 public:
  process_workers(const dataset& data, const loader_spec& spec, int count);
  ~process_workers();
  process_workers(const process_workers&) = delete;
  process_workers& operator=(const process_workers&) = delete;

  [[nodiscard]] int count() const noexcept { return static_cast<int>(workers_.size()); }
  [[nodiscard]] pid_t pid(int w) const { return workers_.at(static_cast<std::size_t>(w)).pid; }
  [[nodiscard]] int socket(int w) const { return workers_.at(static_cast<std::size_t>(w)).fd; }
  /// now_ns() just before the first fork.
  [[nodiscard]] std::int64_t started_at_ns() const noexcept { return started_at_; }

  /// Asks worker `w` for batch `number` of `epoch`; false when the worker is gone.
  bool send_task(int w, std::uint64_t epoch, std::uint64_t number) noexcept;

  /// One message from worker `w`, whose socket is readable (blocks otherwise). A worker's end
  /// (its socket closed) is `gone`, with its exit status or signal as `text`.
  [[nodiscard]] worker_message receive(int w);

  /// Each worker's memory now (the ones that can be read).
  [[nodiscard]] std::vector<process_memory> memory() const;

  /// A pool that lost a worker or whose tasks were abandoned is not reused across epochs.
  void mark_broken() noexcept { broken_ = true; }
  [[nodiscard]] bool broken() const noexcept { return broken_; }

 private:
  struct worker {
    worker(pid_t p, int f) noexcept : pid(p), fd(f) {}
    worker(const worker& o) noexcept
        : pid(o.pid), fd(o.fd), reaped(o.reaped.load()), status(o.status) {}
    worker& operator=(const worker&) = delete;
    pid_t pid = -1;
    int fd = -1;  // this process's end of the socket pair
    // Set by the thread that receives, read by memory() from the thread that samples memory.
    std::atomic<bool> reaped{false};
    int status = 0;
  };
  std::string how_it_ended(worker& w);
  void stop() noexcept;

  std::vector<worker> workers_;
  std::int64_t started_at_ = 0;
  std::atomic<bool> broken_{false};
};

/// Unmaps a segment that receive() mapped.
void unmap_segment(std::byte* mapping, std::size_t bytes) noexcept;

}  // namespace pinbench::loader
