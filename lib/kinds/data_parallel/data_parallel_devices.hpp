// The devices one data_parallel case drives: each opened as a backend of its own, its memory
// handed out by its own caching allocator (so that a device's peak is what
// torch.cuda.max_memory_allocated would report for it), with one stream for its work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/upstream.hpp"
#include "device/backend.hpp"
#include "measure/engine.hpp"

namespace pinbench::kinds::data_parallel {

/// A block of one device's caching allocator, given back when it goes (a tensor's storage).
class tensor {
 public:
  tensor() = default;
  tensor(alloc::device_allocator& a, std::size_t bytes);
  ~tensor() { reset(); }
  tensor(tensor&& other) noexcept;
  tensor& operator=(tensor&& other) noexcept;
  tensor(const tensor&) = delete;
  tensor& operator=(const tensor&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  void reset() noexcept;

 private:
  alloc::device_allocator* owner_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// What a device's allocator reports for a stretch of work (a step).
struct peak_memory {
  std::uint64_t allocated = 0, reserved = 0;
};

class device_slot {
 public:
  /// `owned` is the backend opened for this device, or null when `dev` is borrowed (the run's
  /// own device, when the run cannot open others).
  device_slot(std::unique_ptr<device::backend> owned, device::backend& dev);
  ~device_slot();
  device_slot(const device_slot&) = delete;
  device_slot& operator=(const device_slot&) = delete;

  [[nodiscard]] device::backend& dev() noexcept { return dev_; }
  [[nodiscard]] device::stream& stream() noexcept { return *stream_; }
  [[nodiscard]] tensor alloc(std::size_t bytes) { return {*allocator_, bytes}; }

  /// Peaks from now on (torch.cuda.reset_peak_memory_stats).
  void reset_peaks() { allocator_->reset_peak_stats(); }
  [[nodiscard]] peak_memory peaks() const;

 private:
  std::unique_ptr<device::backend> owned_;
  device::backend& dev_;
  std::unique_ptr<alloc::upstream> upstream_;
  std::unique_ptr<alloc::device_allocator> allocator_;
  std::unique_ptr<device::stream> stream_;
};

using device_set = std::vector<std::unique_ptr<device_slot>>;

/// `count` devices through ctx.platform (device 0 is opened again beside ctx.dev), or ctx.dev alone
/// when one is asked for and the run cannot open devices. Throws unsupported_error when the
/// process cannot drive that many.
[[nodiscard]] device_set open_devices(measure::run_context& ctx, int count);

}  // namespace pinbench::kinds::data_parallel
