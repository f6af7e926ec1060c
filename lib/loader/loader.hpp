// A DataLoader in C++: workers (threads, or processes as PyTorch runs them) build whole
// batches, a pin stage copies them into page-locked memory, and the consumer receives them in
// order, with at most prefetch_factor x num_workers batches outstanding, as PyTorch's
// DataLoader does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "loader/dataset.hpp"
#include "loader/pinned_pool.hpp"
#include "loader/process_workers.hpp"

namespace pinbench::loader {

/// A failure inside the loader (a worker that threw, a failed read), with the worker named.
class loader_error : public pinbench::error {
 public:
  using pinbench::error::error;
};

enum class pin_mode { per_batch, ring };

/// How workers run: threads of this process, or processes (process_workers.hpp) whose batches
/// travel through shared memory, as PyTorch's DataLoader workers do.
enum class worker_method { thread, process };

struct loader_spec {
  std::size_t batch_size = 64;
  int num_workers = 2;      ///< 0: batches are built in the consuming thread
  int prefetch_factor = 2;  ///< batches outstanding per worker (ignored with 0 workers)
  bool pin_memory = true;
  bool shuffle = false;
  bool drop_last = false;
  std::uint64_t seed = 0;  ///< shuffle seed; epoch e uses seed + e
  worker_method method = worker_method::thread;
  /// Process workers kept from one epoch to the next (with a kept_workers from the caller);
  /// without it each epoch starts its own and stops them at its end.
  bool persistent_workers = false;
  /// With workers: how long the consumer waits for one batch before the epoch fails, as
  /// DataLoader(timeout=) (0 = for ever, PyTorch's default). A worker that died or raised
  /// fails the epoch at once without it; this catches the one that is alive and stuck.
  std::int64_t timeout_ns = 0;
};

/// Batches outstanding at most: dispatched to workers and not yet handed to the consumer.
[[nodiscard]] std::size_t max_outstanding(const loader_spec& spec) noexcept;

/// The sample order of one epoch (a permutation when shuffling), cut into batches; the trailing
/// partial batch is dropped with drop_last.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> epoch_batches(std::uint64_t samples,
                                                                    const loader_spec& spec,
                                                                    std::uint64_t epoch);

/// The bytes of a batch of `count` samples: the headers first, then the samples, contiguous.
[[nodiscard]] constexpr std::size_t batch_bytes(std::size_t count,
                                                std::size_t sample_bytes) noexcept {
  return count * (sizeof(sample_header) + sample_bytes);
}

/// Builds the batch of samples `indices` into `out` (batch_bytes of them): the samples, then
/// their headers in front; `costs` (one per sample, or null) gets what each cost. `cancel` is
/// polled between samples. Throws what the dataset throws.
void collate_batch(const dataset& data, const std::vector<std::uint64_t>& indices, std::byte* out,
                   sample_cost* costs, const std::atomic<bool>* cancel);

/// One batch as the consumer holds it. Move-only; give it back with epoch::release().
struct batch {
  std::uint64_t number = 0;  ///< position in the epoch, from 0
  std::size_t samples = 0;
  std::byte* data = nullptr;  ///< headers (samples x sample_header), then the samples' bytes
  std::size_t bytes = 0;
  bool pinned = false;        ///< in page-locked memory from the pool
  std::int64_t build_ns = 0;  ///< time the worker (or the consumer) spent building it
  std::int64_t pin_ns = 0;    ///< time spent copying it into pinned memory (0 when not pinned)
  int worker = -1;            ///< the worker that built it (-1: the consuming thread)
  /// Process workers: from the batch being ready in its worker to its segment being mapped
  /// here (-1 for the other modes).
  std::int64_t ipc_ns = -1;
  /// Per sample, what it cost (jpeg source only; empty for the others).
  std::vector<sample_cost> costs;

  [[nodiscard]] const sample_header* headers() const noexcept {
    return reinterpret_cast<const sample_header*>(data);
  }

  // Owned storage, for epoch's use.
  std::uint32_t pageable_slot = 0;
  std::size_t mapped_bytes = 0;  ///< >0: `data` is a worker's shared-memory segment mapped here
  pinned_lease lease;
};

/// Instrumentation, read by tests and reported by the benchmark.
struct epoch_stats {
  std::size_t max_outstanding_seen = 0;  ///< the most batches outstanding at any moment
  std::size_t batches_delivered = 0;
  std::size_t max_reorder_buffered = 0;  ///< batches that arrived early and waited their turn
  int worker_starts = 0;                 ///< worker pools this epoch started (0 or 1)
  /// From starting the workers to the last one running (threads) or saying it is ready
  /// (processes); -1 when this epoch started none or they are not all up yet.
  std::int64_t worker_startup_ns = -1;
  std::uint64_t peak_shm_bytes = 0;  ///< process workers: segments mapped here at once, most
};

/// Worker processes kept across epochs (persistent_workers), owned by the caller and handed to
/// each epoch: an epoch starts them when there are none or they broke (a worker died, an epoch
/// was abandoned mid-way), and leaves them running at its end.
struct kept_workers {
  std::unique_ptr<process_workers> pool;
};

/// One pass over the dataset, like iter(DataLoader): starts its workers (and pin thread) on
/// construction and stops them in the destructor, at any point (end of data, error, Ctrl-C),
/// without leaving a thread running. Not copyable; used from one consuming thread.
class epoch {
 public:
  /// `pool` is required when spec.pin_memory is true. `epoch_number` picks the shuffle order.
  /// `kept` holds persistent process workers (used when spec.persistent_workers).
  epoch(const dataset& data, const loader_spec& spec, std::uint64_t epoch_number,
        device::backend& dev, pinned_pool* pool, kept_workers* kept = nullptr);
  ~epoch();
  epoch(const epoch&) = delete;
  epoch& operator=(const epoch&) = delete;

  /// The next batch in order, or nullopt at the end of the epoch. Rethrows a worker's error as
  /// loader_error ("worker 2: ..."); throws interrupted_error on Ctrl-C while waiting.
  [[nodiscard]] std::optional<batch> next();

  /// Gives a batch back after its copies were enqueued on `s` (its pinned memory is then guarded
  /// by an event on `s`). nullptr stream: nothing read it (it goes back at once).
  void release(batch& b, device::stream* s);

  [[nodiscard]] std::size_t batch_count() const noexcept;
  [[nodiscard]] epoch_stats stats() const;

  /// Process workers: each one's memory now (empty for the other modes).
  [[nodiscard]] std::vector<process_memory> worker_memory() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace pinbench::loader
