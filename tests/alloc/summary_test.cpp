// memory_summary(): the layout of torch.cuda.memory_summary() and PyTorch's unit scaling.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

#include "alloc/summary.hpp"
#include "core/units.hpp"
#include "golden.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string row(const std::vector<std::string>& lines, const std::string& title) {
  for (const auto& l : lines)
    if (l.rfind("| " + title + " ", 0) == 0) return l;
  return "(no row " + title + ")";
}

memory_stats sample_stats() {
  memory_stats s;
  s.allocated_bytes.all = {64 * (1 << 20), 128 * (1 << 20), 1 << 30, (1 << 30) - 64 * (1 << 20)};
  s.allocated_bytes.large_pool = {63 * (1 << 20), 120 * (1 << 20), 1000 * (1 << 20), 0};
  s.allocated_bytes.small_pool = {1 << 20, 8 << 20, 24 << 20, 0};
  s.reserved_bytes.all = {200 * (1 << 20), 300 * (1 << 20), 300 * (1 << 20), 100 * (1 << 20)};
  s.allocation.all = {12, 40, 1500000, 1499988};
  s.oversize_allocations = {1, 2, 3, 2};
  s.num_ooms = 2;
  s.num_alloc_retries = 5;
  return s;
}

}  // namespace

TEST_CASE("sizes and counts are scaled as PyTorch's memory_summary scales them",
          "[alloc][summary]") {
  using detail::summary_count;
  using detail::summary_size;
  CHECK(summary_size(0, 0) == "     0 B  ");
  CHECK(summary_size(512, 512) == "   512 B  ");
  // A unit is taken from 768 of it on: 700 KiB still reads in bytes, 64 MiB in KiB.
  CHECK(summary_size(700 * 1024, 700 * 1024) == "716800 B  ");
  CHECK(summary_size(768 * 1024, 768 * 1024) == "   768 KiB");
  CHECK(summary_size(64_MiB, 64_MiB) == " 65536 KiB");
  CHECK(summary_size(1_GiB, 1_GiB) == "  1024 MiB");
  CHECK(summary_size(static_cast<std::int64_t>(80_GiB), static_cast<std::int64_t>(80_GiB)) ==
        " 81920 MiB");
  // A sub-row takes its "all" row's unit, whole numbers rounded down.
  CHECK(summary_size(1536, 1_GiB) == "     0 MiB");
  CHECK(summary_count(12, 12) == "     12   ");
  CHECK(summary_count(749999, 749999) == " 749999   ");
  CHECK(summary_count(1500000, 1500000) == "   1500 K ");
  CHECK(summary_count(2'000'000'000, 2'000'000'000) == "   2000 M ");
}

TEST_CASE("memory_summary draws PyTorch's box with every row", "[alloc][summary]") {
  const std::string text = memory_summary(sample_stats(), "host backend (emulated device)");
  const auto lines = lines_of(text);
  REQUIRE(lines.size() == 47);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(l.front() == '|');
    CHECK(l.back() == '|');
  }
  CHECK(lines[0] == "|" + std::string(75, '=') + "|");
  CHECK(lines[1].find("pinbench memory summary, host backend (emulated device)") !=
        std::string::npos);
  CHECK(lines[1].size() == 77);
  CHECK(lines[3] ==
        "|            CUDA OOMs: 2            |        cudaMalloc retries: 5         |");
  CHECK(lines[5] ==
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |");
  for (const char* title :
       {"Allocated memory", "Active memory", "Requested memory", "GPU reserved memory",
        "Non-releasable memory", "Allocations", "Active allocs", "GPU reserved segments",
        "Non-releasable allocs", "Oversize allocations", "Oversize GPU segments"}) {
    INFO(title);
    CHECK(row(lines, title).find("(no row") == std::string::npos);
  }
  CHECK(row(lines, "Allocated memory") ==
        "| Allocated memory      |  65536 KiB | 131072 KiB |   1024 MiB |    960 MiB |");
  // Sub-rows follow, in PyTorch's order and in their "all" row's units.
  const auto at = std::find(lines.begin(), lines.end(), row(lines, "Allocated memory"));
  REQUIRE(at + 2 < lines.end());
  CHECK(at[1] == "|       from large pool |  64512 KiB | 122880 KiB |   1000 MiB |      0 MiB |");
  CHECK(at[2] == "|       from small pool |   1024 KiB |   8192 KiB |     24 MiB |      0 MiB |");
  CHECK(row(lines, "Allocations") ==
        "| Allocations           |      12    |      40    |    1500 K  |    1499 K  |");
  CHECK(row(lines, "Oversize allocations") ==
        "| Oversize allocations  |       1    |       2    |       3    |       2    |");
  CHECK(lines.back() == "|" + std::string(75, '=') + "|");
}

TEST_CASE("memory_summary matches its golden text", "[alloc][summary]") {
  testing::check_golden("memory_summary.txt",
                        memory_summary(sample_stats(), "host backend (emulated device)"));
}
