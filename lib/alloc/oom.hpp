// The out-of-memory error of the allocators, worded as PyTorch's: what was asked for, what the
// device has and what the allocator holds, on one line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "alloc/allocator.hpp"
#include "alloc/upstream.hpp"

namespace pinbench::alloc::detail {

/// PyTorch's format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "1.25 GiB" (a unit is used up
/// to and including its next power of 1024, so 1 MiB prints as "1024.00 KiB").
[[nodiscard]] std::string format_size(std::uint64_t bytes);

/// The error for a failed request: `tried_bytes` is what the allocator tried to get from the
/// device (PyTorch reports the segment size there), `allowed_bytes` the memory-fraction limit
/// when one is set. `who` names the allocator in the message ("caching", "raw").
[[nodiscard]] oom_error make_oom_error(const upstream& up, std::string_view who,
                                       std::uint64_t tried_bytes, std::uint64_t allocated_bytes,
                                       std::uint64_t reserved_bytes,
                                       std::optional<std::uint64_t> allowed_bytes);

/// Free device bytes as cudaMemGetInfo would report them.
[[nodiscard]] std::uint64_t device_free_bytes(const upstream& up) noexcept;

}  // namespace pinbench::alloc::detail
