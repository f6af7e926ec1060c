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

/// The units metrics are recorded in (a metric's `unit` in the result). Any other label
/// ("GB/s", "samples/s") is `labelled`: its number is shown with the label beside it.
enum class unit { none, count, ns, bytes, fraction, labelled };

/// The unit a metric's label names: "ns", "bytes", "fraction", "count", "" (none), else
/// labelled.
[[nodiscard]] unit unit_of(std::string_view label) noexcept;

/// Where a value's unit is shown: beside the number ("12.0 GB/s", "25.0%", three significant
/// digits), or once in its column's header (header_unit) above numbers alone ("12.03", "77.3",
/// two decimals so that a column lines up). Durations and sizes carry their scaled unit either
/// way ("1.50 us", "4 MiB").
enum class unit_place { in_cell, in_header };

/// The one formatting of a value by its unit's label; "-" when it is not finite.
[[nodiscard]] std::string format_value(double v, std::string_view label, unit_place place);

/// What a column header adds for values shown with unit_place::in_header: "" for units whose
/// values carry their own, "%" for fractions, else the label.
[[nodiscard]] std::string header_unit(std::string_view label);

constexpr std::uint64_t operator""_KiB(unsigned long long v) {
  return v << 10;
}
constexpr std::uint64_t operator""_MiB(unsigned long long v) {
  return v << 20;
}
constexpr std::uint64_t operator""_GiB(unsigned long long v) {
  return v << 30;
}

}  // namespace pinbench
