#include "core/pattern.hpp"

#include <cstring>

namespace pinbench {

std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  x ^= x >> 33;
  return x;
}

void fill_pattern(std::byte* p, std::size_t n, std::uint64_t seed) noexcept {
  std::uint64_t x = mix64(seed + 0x9E3779B97F4A7C15ull) | 1;  // xorshift must not start at 0
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<std::byte>(x >> (8 * (i % 8)));
}

}  // namespace pinbench
