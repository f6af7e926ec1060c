// The "raw" strategy: cudaMalloc and cudaFree for every request, the baseline that the caching
// allocator is measured against. Each live request is one segment holding one block.
#include <cstdint>
#include <memory>

#include "alloc/allocator.hpp"
#include "alloc/history.hpp"
#include "alloc/live_allocations.hpp"
#include "alloc/oom.hpp"

namespace pinbench::alloc {

namespace {

using detail::trace_action;

constexpr std::size_t kMinBlockSize = 512;
class raw_allocator final : public device_allocator {
 public:
  explicit raw_allocator(upstream& up) : up_(up) {}

  ~raw_allocator() override {
    try {
      for (const auto& [ptr, a] : live_) up_.deallocate(reinterpret_cast<void*>(ptr), a.size);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }

  raw_allocator(const raw_allocator&) = delete;
  raw_allocator& operator=(const raw_allocator&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "raw"; }

  [[nodiscard]] void* allocate(std::size_t bytes, stream_id stream) override {
    if (bytes == 0) return nullptr;
    // PyTorch checks this before it picks its uncached path: no counter moves.
    if (bytes >= detail::largest_request_bytes) throw detail::make_too_large_error(bytes);
    const std::size_t size = (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
    void* const ptr = up_.allocate(size);
    if (ptr == nullptr) {
      history_.record(trace_action::oom, detail::device_free_bytes(up_), size, stream);
      ++stats_.num_ooms;
      const auto allocated = static_cast<std::uint64_t>(stats_.allocated_bytes.all.current);
      throw detail::make_raw_oom_error(up_, {size, allocated, allocated});
    }
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    const detail::live_allocation a{size, bytes, stream};
    live_.add(ptr, a);
    stats_.note_segment_alloc(a.small(), size);
    stats_.note_alloc(a.small(), size, bytes);
    ++stats_.num_device_alloc;
    history_.record(trace_action::segment_alloc, address, size, stream);
    history_.record(trace_action::alloc, address, bytes, stream);
    return ptr;
  }

  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    const auto it = live_.find_live(ptr);
    const detail::live_allocation a = it->second;
    live_.erase(it);
    history_.record(trace_action::free_requested, address, a.requested_size, a.stream);
    history_.record(trace_action::free_completed, address, a.requested_size, a.stream);
    history_.record(trace_action::segment_free, address, a.size, a.stream);
    up_.deallocate(ptr, a.size);
    stats_.note_segment_free(a.small(), a.size);
    stats_.note_free(a.small(), a.size, a.requested_size);
    ++stats_.num_device_free;
  }

  /// Nothing is cached: only the synchronisation that empty_cache implies.
  void empty_cache() override {
    history_.record(trace_action::empty_cache, 0, 0, 0);
    ++stats_.num_sync_all_streams;
    up_.synchronize();
  }

  [[nodiscard]] memory_stats stats() const override { return stats_; }

  void reset_peak_stats() override { stats_.reset_peaks(); }

  [[nodiscard]] snapshot snapshot_of(bool with_trace) const override {
    return live_.take_snapshot(with_trace ? &history_ : nullptr);
  }

  void record_history(bool enabled, std::size_t max_entries) override {
    history_.set(enabled, max_entries);
  }

 private:
  upstream& up_;
  detail::live_allocations live_;
  memory_stats stats_;
  detail::history history_;
};

}  // namespace

std::unique_ptr<device_allocator> make_raw_allocator(upstream& up) {
  return std::make_unique<raw_allocator>(up);
}

}  // namespace pinbench::alloc
