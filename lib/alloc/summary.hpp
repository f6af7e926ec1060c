// memory_summary(): the allocator's counters as the table torch.cuda.memory_summary() prints.
#pragma once

#include <string>
#include <string_view>

#include "alloc/allocator.hpp"

namespace pinbench::alloc {

/// The box of torch.cuda.memory_summary() (75 columns, rows per statistic with large/small pool
/// sub-rows, columns Cur Usage / Peak Usage / Tot Alloc / Tot Freed), titled
/// "pinbench memory summary, <device_label>". Sizes and counts are scaled as PyTorch scales
/// them: each row in the unit its "all" figure needs, whole numbers only.
[[nodiscard]] std::string memory_summary(const memory_stats& stats, std::string_view device_label);

namespace detail {
/// PyTorch's _format_size: `bytes` in the unit chosen for `reference_bytes`, "  65536 KiB".
[[nodiscard]] std::string summary_size(std::int64_t bytes, std::int64_t reference_bytes);
/// PyTorch's _format_count: "     12   ", "   1500 K ".
[[nodiscard]] std::string summary_count(std::int64_t count, std::int64_t reference_count);
}  // namespace detail

}  // namespace pinbench::alloc
