// Sizes and durations as people write them ("64MiB", "500us") and as pinbench prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pinbench {

/// Parses "512", "4KiB", "64MiB", "2GiB", "1TiB" (also KB/MB/GB as decimal units, B suffix
/// optional). Returns nullopt on anything else, including overflow and negative numbers.
[[nodiscard]] std::optional<std::uint64_t> parse_bytes(std::string_view text);

/// Parses "500ns", "10us", "2.5ms", "2s", "1min" into nanoseconds. "0" alone is accepted.
/// Returns nullopt on anything else, including negative values.
[[nodiscard]] std::optional<std::int64_t> parse_duration_ns(std::string_view text);

/// Parses a share as people write it: "5%", " 12.5% ", "150%", or a fraction "0.05" (at most 1:
/// a bare "5" could mean 5% or 500%, so it is refused). Returns the fraction (0.05), nullopt
/// for anything else, including negative values.
[[nodiscard]] std::optional<double> parse_fraction(std::string_view text);

/// 4096 -> "4 KiB", 1536 -> "1.5 KiB", 1000 -> "1000 B".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

/// Compact size for ids and tables: 4096 -> "4KiB", 1000 -> "1000".
[[nodiscard]] std::string format_bytes_compact(std::uint64_t bytes);

/// 1500 -> "1.50 us", 2'000'000 -> "2.00 ms"; picks ns/us/ms/s.
[[nodiscard]] std::string format_duration_ns(double ns);

constexpr std::uint64_t operator""_KiB(unsigned long long v) { return v << 10; }
constexpr std::uint64_t operator""_MiB(unsigned long long v) { return v << 20; }
constexpr std::uint64_t operator""_GiB(unsigned long long v) { return v << 30; }

}  // namespace pinbench
