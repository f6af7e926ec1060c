// Where the loader's pin stage gets page-locked memory: a caching host allocator (PyTorch's
// CachingHostAllocator rules) or a fixed ring of preallocated slots. Both hand out leases that
// may be reused only after the copies that read them have completed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "device/backend.hpp"

namespace pinbench::loader {

/// Page-locked memory lent to one batch.
struct pinned_lease {
  std::byte* data = nullptr;
  std::size_t bytes = 0;     ///< what was asked for
  std::size_t capacity = 0;  ///< what the block holds (per_batch: the power of two)
  std::uint32_t id = 0;      ///< the pool's block / slot number
  bool page_locked = true;   ///< false when the backend fell back to unlocked memory
  [[nodiscard]] explicit operator bool() const noexcept { return data != nullptr; }
};

struct pinned_stats {
  std::uint64_t reserved_bytes = 0;       ///< page-locked memory the pool holds now
  std::uint64_t peak_reserved_bytes = 0;  ///< since the last reset_peak()
  std::uint64_t in_use_bytes = 0;         ///< lent out, or returned with copies still pending
  std::uint64_t blocks = 0;               ///< blocks (per_batch) or slots (ring) held
  std::uint64_t host_allocs = 0;          ///< cudaHostAlloc calls made
  std::uint64_t reuses = 0;               ///< leases served from a cached block or slot
  std::uint64_t waits = 0;                ///< ring: acquires that had to wait for a copy
};

class pinned_pool {
 public:
  virtual ~pinned_pool() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  ///< "per_batch" | "ring"
  /// A lease of at least `bytes`. per_batch: a free block of the same power-of-two size whose
  /// copies have all completed, else a new one; ring: the next slot, waiting for the copy that
  /// last read it. Throws pinned_memory_error with the limits and a hint when the memory cannot
  /// be had (the pool's limit reached, or the backend refused). Thread-safe.
  [[nodiscard]] virtual pinned_lease acquire(std::size_t bytes) = 0;
  /// Gives the lease back once the copies that read it are enqueued on `s`: an event recorded on
  /// `s` now guards its reuse. Thread-safe.
  virtual void release(const pinned_lease& lease, device::stream& s) = 0;
  /// Gives back a lease that no copy read (a batch dropped at shutdown). Thread-safe.
  virtual void discard(const pinned_lease& lease) = 0;
  [[nodiscard]] virtual pinned_stats stats() const = 0;
  virtual void reset_peak() = 0;
};

/// PyTorch's caching host allocator: sizes rounded up to a power of two, free blocks cached per
/// size and reused only once every event recorded for them has completed. `limit_bytes` caps the
/// page-locked memory it may hold (0 = no cap beyond what the backend allows).
[[nodiscard]] std::unique_ptr<pinned_pool> make_caching_host_allocator(device::backend& dev,
                                                                       std::size_t limit_bytes);

/// `slots` preallocated slots of `slot_bytes`, lent in turn. Throws pinned_memory_error when
/// slots x slot_bytes exceeds `limit_bytes` (0 = no cap) or the backend refuses.
[[nodiscard]] std::unique_ptr<pinned_pool> make_pinned_ring(device::backend& dev, std::size_t slots,
                                                            std::size_t slot_bytes,
                                                            std::size_t limit_bytes);

/// The text every "pinned memory cannot be had" error ends with: RLIMIT_MEMLOCK, host memory
/// available (as `pinbench info` shows them) and what to try (smaller batch_size, fewer
/// num_workers, pin_mode ring, pinned_limit).
[[nodiscard]] std::string pinned_limits_hint();

}  // namespace pinbench::loader
