// The "async" strategy: the driver's stream-ordered allocator (cudaMallocAsync) does the
// caching; pinbench only counts. Each live request is shown as one segment holding one block.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "alloc/allocator.hpp"
#include "alloc/history.hpp"
#include "alloc/live_allocations.hpp"
#include "alloc/oom.hpp"
#include "device/backend.hpp"

namespace pinbench::alloc {

namespace {

using detail::trace_action;

class async_allocator final : public device_allocator {
 public:
  async_allocator(device::backend& dev, std::size_t capacity) : dev_(dev) {
    if (!dev.supports_async_alloc())
      throw device_error(fmt::format(
          "allocator async (cudaMallocAsync) is not supported by the {} backend", dev.name()));
    const device::memory_info info = dev.device_memory();
    capacity_ = capacity != 0 ? capacity : info.total_bytes;
    // Each run starts from an empty pool, so that memory cached by an earlier run neither
    // hides this run's reservations nor counts as its own.
    dev_.synchronize();
    dev_.trim_async_pool(0);
    dev_.reset_async_pool_peaks();
    const device::async_pool_usage u = dev_.async_pool();
    baseline_reserved_ = u.reserved_bytes;
  }

  ~async_allocator() override {
    try {
      for (const auto& [address, a] : live_)
        dev_.free_async(reinterpret_cast<void*>(address), *streams_.at(a.stream));
      live_.clear();
      dev_.synchronize();  // the streams go after this, with nothing left on them
      // The pool keeps freed memory (release threshold UINT64_MAX): hand it back to the device
      // so that the cases after this one see it, as cudaMalloc and the caching allocator do.
      dev_.trim_async_pool(0);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }

  async_allocator(const async_allocator&) = delete;
  async_allocator& operator=(const async_allocator&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "async"; }

  [[nodiscard]] void* allocate(std::size_t bytes, stream_id stream) override {
    if (bytes == 0) return nullptr;
    // As PyTorch's cudaMallocAsync backend: refused before anything, no counter moves.
    if (bytes >= detail::largest_request_bytes) throw detail::make_too_large_error(bytes);
    device::stream& s = stream_for(stream);
    const auto allocated = static_cast<std::uint64_t>(stats_.allocated_bytes.all.current);
    void* ptr = nullptr;
    if (bytes <= capacity_ - std::min<std::uint64_t>(allocated, capacity_))
      ptr = dev_.malloc_async(bytes, s);
    if (ptr == nullptr) {
      ++stats_.num_ooms;
      history_.record(trace_action::oom, 0, bytes, stream);
      throw make_error(bytes, allocated);
    }
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    // The pool's own rounding is not observable: a request holds what it asked for.
    const detail::live_allocation a{bytes, bytes, stream};
    live_.add(ptr, a);
    stats_.note_alloc(a.small(), bytes, bytes);
    ++stats_.num_device_alloc;
    history_.record(trace_action::alloc, address, bytes, stream);
    return ptr;
  }

  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    const auto it = live_.find_live(ptr);
    const detail::live_allocation a = it->second;
    dev_.free_async(ptr, *streams_.at(a.stream));
    live_.erase(it);
    history_.record(trace_action::free_requested, address, a.requested_size, a.stream);
    stats_.note_free(a.small(), a.size, a.requested_size);
    ++stats_.num_device_free;
  }

  /// As PyTorch's cudaMallocAsync backend: synchronise, then trim the pool to nothing.
  void empty_cache() override {
    history_.record(trace_action::empty_cache, 0, 0, 0);
    ++stats_.num_sync_all_streams;
    dev_.synchronize();
    dev_.trim_async_pool(0);
  }

  [[nodiscard]] memory_stats stats() const override {
    memory_stats s = stats_;
    const device::async_pool_usage u = dev_.async_pool();
    // The default pool is the process's: what it held before this allocator is not ours.
    const auto reserved = static_cast<std::int64_t>(
        u.reserved_bytes > baseline_reserved_ ? u.reserved_bytes - baseline_reserved_ : 0);
    const auto peak = static_cast<std::int64_t>(u.reserved_peak_bytes > baseline_reserved_
                                                    ? u.reserved_peak_bytes - baseline_reserved_
                                                    : 0);
    s.reserved_bytes.all.current = reserved;
    s.reserved_bytes.all.peak = std::max(peak, reserved);
    return s;
  }

  void reset_peak_stats() override {
    stats_.reset_peaks();
    dev_.reset_async_pool_peaks();
  }

  [[nodiscard]] snapshot snapshot_of(bool with_trace) const override {
    return live_.take_snapshot(with_trace ? &history_ : nullptr);
  }

  void record_history(bool enabled, std::size_t max_entries) override {
    history_.set(enabled, max_entries);
  }

 private:
  device::stream& stream_for(stream_id id) {
    auto& s = streams_[id];
    if (s == nullptr) s = dev_.create_stream();
    return *s;
  }

  oom_error make_error(std::uint64_t bytes, std::uint64_t allocated) const {
    const std::uint64_t reserved = static_cast<std::uint64_t>(stats().reserved_bytes.all.current);
    const std::uint64_t left = allocated < capacity_ ? capacity_ - allocated : 0;
    std::uint64_t free_bytes = left;
    try {
      free_bytes = std::min<std::uint64_t>(left, dev_.device_memory().free_bytes);
    } catch (const pinbench::error&) {  // NOLINT(bugprone-empty-catch): the cap stands in
    }
    const std::uint64_t unallocated = reserved > allocated ? reserved - allocated : 0;
    std::string message = fmt::format(
        "CUDA out of memory. Tried to allocate {}. Device capacity {} of which {} is free. Of "
        "the allocated memory {} is allocated by the async allocator (cudaMallocAsync), and {} "
        "is reserved by its pool but unallocated.",
        detail::format_size(bytes), detail::format_size(capacity_), detail::format_size(free_bytes),
        detail::format_size(allocated), detail::format_size(unallocated));
    return oom_error(message, bytes, allocated, reserved, free_bytes);
  }

  device::backend& dev_;
  std::size_t capacity_ = 0;
  std::uint64_t baseline_reserved_ = 0;
  std::unordered_map<stream_id, std::unique_ptr<device::stream>> streams_;
  detail::live_allocations live_;
  memory_stats stats_;
  detail::history history_;
};

}  // namespace

std::unique_ptr<device_allocator> make_async_allocator(device::backend& dev, std::size_t capacity) {
  return std::make_unique<async_allocator>(dev, capacity);
}

}  // namespace pinbench::alloc
