// The device allocator strategies (caching, raw, async) behind one interface, with PyTorch's
// memory_stats() counters, memory snapshots and an out-of-memory error that carries the figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/config.hpp"
#include "alloc/recording.hpp"
#include "alloc/upstream.hpp"
#include "core/error.hpp"

namespace pinbench::alloc {

/// One statistic with PyTorch's semantics: current value, its peak, and the running totals
/// of what was added (allocated) and removed (freed).
struct stat {
  std::int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void increase(std::int64_t amount);
  void decrease(std::int64_t amount);
  void reset_peak() { peak = current; }
};

/// A byte count as a statistic's amount (PyTorch keeps them as int64_t).
[[nodiscard]] constexpr std::int64_t stat_bytes(std::size_t bytes) noexcept {
  return static_cast<std::int64_t>(bytes);
}

/// A statistic split by pool, as PyTorch's StatArray ("all", "small_pool", "large_pool").
struct stat_array {
  stat all, small_pool, large_pool;
  void increase(bool small, std::int64_t amount);
  void decrease(bool small, std::int64_t amount);
  void reset_peak();
};

/// memory_stats(): every counter of the PyTorch native allocator that pinbench reproduces.
struct memory_stats {
  stat_array allocation, segment, active, inactive_split;  // counts
  stat_array allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  stat oversize_allocations, oversize_segments;
  std::int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0, num_device_free = 0;
  std::int64_t max_split_size = -1;  ///< bytes; -1 when unlimited (PyTorch shows SIZE_MAX as -1)

  // The bookkeeping every allocator does, in one place so that the counters move together as
  // PyTorch's allocator moves them. `small` picks the pool; `oversize` (the block or segment is
  // at least max_split_size) only ever holds in the caching allocator. num_device_alloc and
  // num_device_free stay with the callers: PyTorch counts a cudaFree before making it.

  /// A block handed out: allocation, allocated_bytes, active, active_bytes, requested_bytes.
  void note_alloc(bool small, std::size_t block_size, std::size_t requested_size,
                  bool oversize = false);
  /// A block given back and done with: note_free_requested, then note_free_completed.
  void note_free(bool small, std::size_t block_size, std::size_t requested_size);
  /// The first half of a free (PyTorch's free()): no longer allocated, still active.
  void note_free_requested(bool small, std::size_t block_size, bool oversize = false);
  /// The second half (PyTorch's free_block()): no longer active either.
  void note_free_completed(bool small, std::size_t block_size, std::size_t requested_size);
  /// Device memory that becomes a segment: segment, reserved_bytes.
  void note_segment_alloc(bool small, std::size_t segment_size, bool oversize = false);
  /// A segment given back to the device.
  void note_segment_free(bool small, std::size_t segment_size, bool oversize = false);

  /// Every peak back to its current value (torch.cuda.reset_peak_memory_stats).
  void reset_peaks();

  /// Flat map with PyTorch's key names: "allocated_bytes.all.peak", "num_ooms", ... (sorted).
  [[nodiscard]] std::map<std::string, std::int64_t> flatten() const;
};

/// A block of a segment, as torch.cuda.memory._snapshot() shows it.
struct block_info {
  std::uint64_t address = 0, size = 0, requested_size = 0;
  std::string state;  ///< "active_allocated", "inactive" (cached), "active_pending_free"
};

struct segment_info {
  std::uint64_t address = 0, total_size = 0, allocated_size = 0, active_size = 0,
                requested_size = 0;
  stream_id stream = 0;
  std::string segment_type;  ///< "small" or "large"
  bool expandable = false;
  std::vector<block_info> blocks;  ///< in address order, covering the segment
};

/// A trace entry, with the action names of PyTorch's snapshot: "alloc", "free_requested",
/// "free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom",
/// "empty_cache" (pinbench's own addition, so that the trace shows where it was called).
struct trace_entry {
  std::string action;
  std::uint64_t address = 0, size = 0;
  stream_id stream = 0;
  std::uint64_t sequence = 0;  ///< order of events (deterministic; no clock)
};

struct snapshot {
  std::vector<segment_info> segments;  ///< sorted by address
  std::vector<trace_entry> trace;      ///< only while history recording is on
};

/// Raised when an allocation cannot be satisfied even after the caching allocator released its
/// cache. The message states requested, allocated, reserved and free bytes, as PyTorch's does.
class oom_error : public pinbench::out_of_memory {
 public:
  oom_error(const std::string& message, std::uint64_t requested, std::uint64_t allocated,
            std::uint64_t reserved, std::uint64_t free_bytes)
      : out_of_memory(message),
        requested_(requested),
        allocated_(allocated),
        reserved_(reserved),
        free_(free_bytes) {}
  [[nodiscard]] std::uint64_t requested() const noexcept { return requested_; }
  [[nodiscard]] std::uint64_t allocated() const noexcept { return allocated_; }
  [[nodiscard]] std::uint64_t reserved() const noexcept { return reserved_; }
  [[nodiscard]] std::uint64_t free_bytes() const noexcept { return free_; }

 private:
  std::uint64_t requested_, allocated_, reserved_, free_;
};

/// Told of every decision a caching allocator makes (alloc/follow.hpp checks them against
/// PyTorch's): each device call as the trace records it, and each out-of-memory error.
class decision_observer {
 public:
  virtual ~decision_observer() = default;
  virtual void on_decision(const allocator_decision& d) = 0;
};

/// The strategy interface. Not thread-safe unless a strategy says so: the benchmark drives one
/// allocator from one thread, as PyTorch's allocator is driven under its mutex.
class device_allocator {
 public:
  virtual ~device_allocator() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  ///< "caching", "raw", "async"

  /// Returns a device pointer for `bytes` on `stream`; 0 bytes gives nullptr and changes nothing.
  /// Throws oom_error when the memory cannot be had (num_ooms counted first).
  [[nodiscard]] virtual void* allocate(std::size_t bytes, stream_id stream) = 0;
  /// Frees what allocate returned; nullptr is a no-op. Throws device_error for an unknown pointer.
  virtual void deallocate(void* ptr) = 0;
  /// Releases every cached segment that holds no live block (synchronising first).
  virtual void empty_cache() = 0;

  [[nodiscard]] virtual memory_stats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  /// The segments and blocks now, with the trace recorded so far (torch.cuda.memory._snapshot).
  [[nodiscard]] snapshot take_snapshot() const { return snapshot_of(true); }
  /// The segments and blocks alone: no copy of the trace (a map taken at every new peak).
  [[nodiscard]] snapshot take_segments() const { return snapshot_of(false); }
  /// Records trace entries from now on (at most max_entries, oldest dropped), or stops.
  virtual void record_history(bool enabled, std::size_t max_entries = 100000) = 0;

  /// Takes over the memory a recording began with (a PyTorch snapshot's start state), before
  /// the first request: no device call is counted and no trace entry made, but reserved and
  /// allocated memory include it. Returns each live block's pointer, segment by segment in the
  /// order of `start`. The caching allocator rebuilds every segment with its blocks at their
  /// offsets; the others, which cache nothing, allocate the live blocks.
  /// Throws oom_error when the start state does not fit the device.
  [[nodiscard]] virtual std::vector<void*> adopt(const start_state& start);

 protected:
  [[nodiscard]] virtual snapshot snapshot_of(bool with_trace) const = 0;
};

/// PyTorch's native caching allocator (docs/architecture.md, "Caching allocator semantics").
/// `memory_fraction` [0, 1], as torch.cuda.set_per_process_memory_fraction (PyTorch 2.6): given,
/// 1.0 included, new segments may not take reserved memory past fraction x upstream capacity,
/// garbage_collection_threshold is armed and the OOM message says what is allowed; none: as if
/// the function was never called.
/// `observer`, when given, is told of every decision (it must outlive the allocator).
[[nodiscard]] std::unique_ptr<device_allocator> make_caching_allocator(
    upstream& up, const config& conf, std::optional<double> memory_fraction = std::nullopt,
    decision_observer* observer = nullptr);

/// The block a caching allocator with `conf` serves a request of `request` bytes with, before
/// any split is left over: PyTorch's round_size (512 B steps, or roundup_power2_divisions).
[[nodiscard]] std::size_t caching_block_size(std::size_t request, const config& conf);

namespace detail {
/// Requests at or below this go to the small pool (PyTorch's kSmallSize).
inline constexpr std::size_t small_request_limit = std::size_t{1} << 20;
/// A small-pool segment (PyTorch's kSmallBuffer); also a small expandable segment's page.
inline constexpr std::size_t small_segment_bytes = std::size_t{2} << 20;
/// A large-pool segment for a block below 10 MiB (PyTorch's kLargeBuffer); also a large
/// expandable segment's page.
inline constexpr std::size_t large_segment_bytes = std::size_t{20} << 20;
}  // namespace detail

/// The segment a caching allocator asks cudaMalloc for to serve a block of `block` bytes:
/// PyTorch's get_allocation_size.
[[nodiscard]] std::size_t caching_segment_size(std::size_t block) noexcept;

/// cudaMalloc / cudaFree for every request (sizes rounded to 512 B as cudaMalloc's granularity
/// is not observable; stats count each request as one segment and one block).
[[nodiscard]] std::unique_ptr<device_allocator> make_raw_allocator(upstream& up);

/// cudaMallocAsync / cudaFreeAsync from the device's default pool (PyTorch's
/// backend:cudaMallocAsync): one backend stream per stream_id, a free is ordered on the stream of
/// its allocation. Requests beyond `capacity` bytes allocated (0 = the device's total) fail as
/// out of memory. reserved_bytes is the pool's (current, peak); num_device_alloc counts calls.
/// Needs dev.supports_async_alloc(); throws device_error otherwise.
[[nodiscard]] std::unique_ptr<device_allocator> make_async_allocator(device::backend& dev,
                                                                     std::size_t capacity);

}  // namespace pinbench::alloc
