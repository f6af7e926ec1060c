// The out-of-memory errors of the allocators. The caching allocator's follow PyTorch 2.6 word
// for word (docs/architecture.md, "PyTorch version"), the device named as pinbench used it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "alloc/allocator.hpp"
#include "alloc/upstream.hpp"

namespace pinbench::alloc::detail {

/// PyTorch's format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "1.25 GiB" (a unit is used up
/// to and including its next power of 1024, so 1 MiB prints as "1024.00 KiB").
[[nodiscard]] std::string format_size(std::uint64_t bytes);

/// The figures every out-of-memory message gives.
struct oom_figures {
  std::uint64_t tried_bytes = 0;  ///< what the allocator asked the device for (a segment)
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  /// set_per_process_memory_fraction's limit, when it was called.
  std::optional<std::uint64_t> allowed_bytes = {};
};

/// DeviceCachingAllocator::malloc's message (PyTorch 2.6), "GPU 0" replaced by
/// up.device_label(). PyTorch adds a per-process clause when it can read NVML; pinbench does
/// not read NVML, so the message is the one PyTorch prints without it.
[[nodiscard]] oom_error make_caching_oom_error(const upstream& up, const oom_figures& f);

/// PyTorch 2.6 refuses a request of 1 EiB (2^60 bytes) or more before rounding it, and moves
/// no counter: this is its error.
[[nodiscard]] oom_error make_too_large_error(std::uint64_t requested_bytes);
inline constexpr std::uint64_t largest_request_bytes = std::uint64_t{1} << 60;

/// The raw allocator's message (cudaMalloc per request: PyTorch has no such allocator), with
/// the same figures.
[[nodiscard]] oom_error make_raw_oom_error(const upstream& up, const oom_figures& f);

/// Free device bytes as cudaMemGetInfo would report them.
[[nodiscard]] std::uint64_t device_free_bytes(const upstream& up) noexcept;

}  // namespace pinbench::alloc::detail
