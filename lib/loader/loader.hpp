// A DataLoader in C++: worker threads build whole batches, a pin stage copies them into
// page-locked memory, and the consumer receives them in order, with at most
// prefetch_factor x num_workers batches outstanding, as PyTorch's DataLoader does.
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

namespace pinbench::loader {

/// A failure inside the loader (a worker that threw, a failed read), with the worker named.
class loader_error : public pinbench::error {
 public:
  using pinbench::error::error;
};

enum class pin_mode { per_batch, ring };

struct loader_spec {
  std::size_t batch_size = 64;
  int num_workers = 2;       ///< 0: batches are built in the consuming thread
  int prefetch_factor = 2;   ///< batches outstanding per worker (ignored with 0 workers)
  bool pin_memory = true;
  bool shuffle = false;
  bool drop_last = false;
  std::uint64_t seed = 0;    ///< shuffle seed; epoch e uses seed + e
};

/// Batches outstanding at most: dispatched to workers and not yet handed to the consumer.
[[nodiscard]] std::size_t max_outstanding(const loader_spec& spec) noexcept;

/// The sample order of one epoch (a permutation when shuffling), cut into batches; the trailing
/// partial batch is dropped with drop_last.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> epoch_batches(std::uint64_t samples,
                                                                    const loader_spec& spec,
                                                                    std::uint64_t epoch);

/// The bytes of a batch of `count` samples: the headers first, then the samples, contiguous.
[[nodiscard]] constexpr std::size_t batch_bytes(std::size_t count, std::size_t sample_bytes) noexcept {
  return count * (sizeof(sample_header) + sample_bytes);
}

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
  /// Per sample, what it cost (jpeg source only; empty for the others).
  std::vector<sample_cost> costs;

  [[nodiscard]] const sample_header* headers() const noexcept {
    return reinterpret_cast<const sample_header*>(data);
  }

  // Owned storage, for epoch's use.
  std::uint32_t pageable_slot = 0;
  pinned_lease lease;
};

/// Instrumentation, read by tests and reported by the benchmark.
struct epoch_stats {
  std::size_t max_outstanding_seen = 0;  ///< the most batches outstanding at any moment
  std::size_t batches_delivered = 0;
  std::size_t max_reorder_buffered = 0;  ///< batches that arrived early and waited their turn
};

/// One pass over the dataset, like iter(DataLoader): starts its workers (and pin thread) on
/// construction and stops them in the destructor, at any point (end of data, error, Ctrl-C),
/// without leaving a thread running. Not copyable; used from one consuming thread.
class epoch {
 public:
  /// `pool` is required when spec.pin_memory is true. `epoch_number` picks the shuffle order.
  epoch(const dataset& data, const loader_spec& spec, std::uint64_t epoch_number,
        device::backend& dev, pinned_pool* pool);
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

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace pinbench::loader
