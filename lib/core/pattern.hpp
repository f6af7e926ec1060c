// Deterministic test data: bytes that differ per seed and are cheap to write at memory speed,
// so that a copy can be checked end to end (transfers, the loader's samples).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pinbench {

/// A 64-bit mix of `x` (a bijection: different inputs give different outputs).
[[nodiscard]] std::uint64_t mix64(std::uint64_t x) noexcept;

/// Fills `n` bytes at `p` with xorshift words started from `seed`: the same seed gives the
/// same bytes, and different seeds differ.
void fill_pattern(std::byte* p, std::size_t n, std::uint64_t seed) noexcept;

}  // namespace pinbench
