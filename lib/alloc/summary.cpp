// The memory_summary() table. Column widths and unit steps follow torch/cuda/memory.py so that
// people who know PyTorch's printout read this one the same way.
#include "alloc/summary.hpp"

#include <array>
#include <vector>

#include <fmt/format.h>

namespace pinbench::alloc {

namespace {

constexpr std::size_t width = 75;

// Python's // on integers rounds toward negative infinity; C++'s / toward zero.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

using formatter = std::string (*)(std::int64_t, std::int64_t);

struct pooled_row {
  const stat_array* values;
  const char* title;
  formatter format;
};

std::string cells(const stat& s, const stat& reference, formatter format) {
  return fmt::format("{} | {} | {} | {}", format(s.current, reference.current),
                     format(s.peak, reference.peak), format(s.allocated, reference.allocated),
                     format(s.freed, reference.freed));
}

}  // namespace

namespace detail {

std::string summary_size(std::int64_t bytes, std::int64_t reference_bytes) {
  static constexpr std::array<const char*, 6> units{"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t unit = 0;
  auto reference = static_cast<double>(reference_bytes);
  // A unit is taken once the reference reaches 768 of it: 700 MiB still reads "716800 KiB".
  while (unit + 1 < units.size() && reference >= 768.0 * 1024) {
    ++unit;
    bytes = floor_div(bytes, 1024);
    reference /= 1024;
  }
  return fmt::format("{:6d} {}", bytes, units[unit]);
}

std::string summary_count(std::int64_t count, std::int64_t reference_count) {
  static constexpr std::array<const char*, 3> units{" ", "K", "M"};
  std::size_t unit = 0;
  auto reference = static_cast<double>(reference_count);
  while (unit + 1 < units.size() && reference >= 750.0 * 1000) {
    ++unit;
    count = floor_div(count, 1000);
    reference /= 1000;
  }
  return fmt::format("{:7d} {} ", count, units[unit]);
}

}  // namespace detail

std::string memory_summary(const memory_stats& stats, std::string_view device_label) {
  using detail::summary_count;
  using detail::summary_size;
  std::vector<std::string> lines;
  const std::string heavy(width, '='), light(width, '-');

  lines.push_back(heavy);
  const std::string title = fmt::format("pinbench memory summary, {}", device_label);
  const std::size_t left = title.size() + 2 < width ? (width - title.size()) / 2 : 1;
  lines.push_back(fmt::format("{:<{}}{:<{}}", "", left, title, width - left));
  lines.push_back(light);
  lines.push_back(fmt::format("  {:9} CUDA OOMs: {:<12d} | {:6} cudaMalloc retries: {:<8d}  ", "",
                              stats.num_ooms, "", stats.num_alloc_retries));
  lines.push_back(heavy);
  lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  const std::array<pooled_row, 9> pooled{{
      {&stats.allocated_bytes, "Allocated memory", summary_size},
      {&stats.active_bytes, "Active memory", summary_size},
      {&stats.requested_bytes, "Requested memory", summary_size},
      {&stats.reserved_bytes, "GPU reserved memory", summary_size},
      {&stats.inactive_split_bytes, "Non-releasable memory", summary_size},
      {&stats.allocation, "Allocations", summary_count},
      {&stats.active, "Active allocs", summary_count},
      {&stats.segment, "GPU reserved segments", summary_count},
      {&stats.inactive_split, "Non-releasable allocs", summary_count},
  }};
  for (const auto& row : pooled) {
    lines.push_back(light);
    // Sub-rows are scaled like their "all" row, so that the three read in one unit.
    const stat& all = row.values->all;
    lines.push_back(fmt::format(" {:<21} | {} ", row.title, cells(all, all, row.format)));
    lines.push_back(fmt::format(" {:<21} | {} ", "      from large pool",
                                cells(row.values->large_pool, all, row.format)));
    lines.push_back(fmt::format(" {:<21} | {} ", "      from small pool",
                                cells(row.values->small_pool, all, row.format)));
  }
  const std::array<std::pair<const stat*, const char*>, 2> oversize{{
      {&stats.oversize_allocations, "Oversize allocations"},
      {&stats.oversize_segments, "Oversize GPU segments"},
  }};
  for (const auto& [value, title_text] : oversize) {
    lines.push_back(light);
    lines.push_back(fmt::format(" {:<21} | {} ", title_text, cells(*value, *value, summary_count)));
  }
  lines.push_back(heavy);

  std::string out;
  for (const auto& l : lines) out += "|" + l + "|\n";
  return out;
}

}  // namespace pinbench::alloc
