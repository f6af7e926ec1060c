// What several allocator tests share (one translation unit per folder in the unity builds).
#pragma once

#include <cstdint>

namespace pinbench::testing {

inline constexpr std::int64_t MiB = 1 << 20;

/// A pointer as the address the allocator's snapshots report.
inline std::uint64_t addr(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace pinbench::testing
