#include "core/units.hpp"

#include <fmt/format.h>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/text.hpp"

namespace pinbench {

namespace {

// Splits "2.5ms" into the number 2.5 and the suffix "ms". Rejects signs, exponents and blanks.
bool split_number(std::string_view s, double& value, std::string_view& suffix, bool& integral) {
  s = trim(s);
  std::size_t i = 0;
  bool digits = false, dot = false;
  while (i < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && !dot))) {
    if (s[i] == '.')
      dot = true;
    else
      digits = true;
    ++i;
  }
  if (!digits) return false;
  const std::string num(s.substr(0, i));
  try {
    std::size_t used = 0;
    value = std::stod(num, &used);
    if (used != num.size()) return false;
  } catch (...) {
    return false;
  }
  suffix = trim(s.substr(i));
  integral = !dot;
  return std::isfinite(value);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  double value = 0;
  std::string_view suffix;
  bool integral = false;
  if (!split_number(text, value, suffix, integral)) return std::nullopt;
  struct suffix_factor {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<suffix_factor, 13> units{{{"", 1},
                                                        {"B", 1},
                                                        {"KiB", 1024.0},
                                                        {"MiB", 1048576.0},
                                                        {"GiB", 1073741824.0},
                                                        {"TiB", 1099511627776.0},
                                                        {"K", 1024.0},
                                                        {"M", 1048576.0},
                                                        {"G", 1073741824.0},
                                                        {"KB", 1e3},
                                                        {"MB", 1e6},
                                                        {"GB", 1e9},
                                                        {"TB", 1e12}}};
  for (const auto& u : units) {
    // Binary suffixes are case-sensitive in spirit but accepted in any case ("64mib").
    if (suffix == u.name || (!u.name.empty() && iequals(suffix, u.name) &&
                             u.name.find('i') != std::string_view::npos)) {
      const double bytes = value * u.factor;
      if (bytes >= 18446744073709549568.0) return std::nullopt;  // beyond uint64
      if (std::floor(bytes) != bytes) return std::nullopt;       // fractional bytes
      if (suffix.empty() && !integral) return std::nullopt;
      return static_cast<std::uint64_t>(bytes);
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> parse_duration_ns(std::string_view text) {
  double value = 0;
  std::string_view suffix;
  bool integral = false;
  if (!split_number(text, value, suffix, integral)) return std::nullopt;
  double factor = 0;
  if (suffix == "ns")
    factor = 1;
  else if (suffix == "us" || suffix == "\xC2\xB5s")
    factor = 1e3;
  else if (suffix == "ms")
    factor = 1e6;
  else if (suffix == "s")
    factor = 1e9;
  else if (suffix == "min")
    factor = 60e9;
  else if (suffix.empty() && value == 0)
    factor = 1;  // a bare 0 needs no unit
  else
    return std::nullopt;
  const double ns = value * factor;
  if (ns > static_cast<double>(std::numeric_limits<std::int64_t>::max()) / 2) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(ns));
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < names.size()) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (v == std::floor(v)) return fmt::format("{:.0f} {}", v, names[u]);
  return fmt::format("{:.3g} {}", v, names[u]);
}

std::string format_bytes_compact(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> names{"", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  std::uint64_t v = bytes;
  while (v != 0 && v % 1024 == 0 && u + 1 < names.size()) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{}{}", v, names[u]);
}

std::string format_duration_ns(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::optional<double> parse_fraction(std::string_view text) {
  std::string_view t = trim(text);
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  const std::string s(t);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != s.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  if (percent) return v / 100;
  if (v > 1) return std::nullopt;  // "5" is ambiguous: 5% or 500%?
  return v;
}

unit unit_of(std::string_view label) noexcept {
  if (label.empty()) return unit::none;
  if (label == "count") return unit::count;
  if (label == "ns") return unit::ns;
  if (label == "bytes") return unit::bytes;
  if (label == "fraction") return unit::fraction;
  return unit::labelled;
}

std::string format_value(double v, std::string_view label, unit_place place) {
  if (!std::isfinite(v)) return "-";
  const bool in_cell = place == unit_place::in_cell;
  switch (unit_of(label)) {
    case unit::ns:
      return format_duration_ns(v);
    case unit::bytes:
      if (v >= 0 && v < 1.8e19) return format_bytes(static_cast<std::uint64_t>(std::llround(v)));
      return fmt::format("{:.0f} B", v);
    case unit::fraction:
      return in_cell ? fmt::format("{:.1f}%", v * 100) : fmt::format("{:.1f}", v * 100);
    case unit::count:
      if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
      break;
    case unit::none:
    case unit::labelled:
      break;
  }
  std::string number;
  const double a = std::fabs(v);
  if (!in_cell)  // a column of numbers: two decimals, three significant digits below 1
    number = v == 0 ? "0" : a >= 1 ? fmt::format("{:.2f}", v) : fmt::format("{:#.3g}", v);
  else if (a == 0 || a >= 100 || std::floor(v) == v)
    number = fmt::format("{:.0f}", v);
  else if (a >= 10)
    number = fmt::format("{:.1f}", v);
  else if (a >= 1)
    number = fmt::format("{:.2f}", v);
  else
    number = fmt::format("{:.3g}", v);
  if (!in_cell || unit_of(label) != unit::labelled) return number;
  return number + " " + std::string(label);
}

std::string header_unit(std::string_view label) {
  switch (unit_of(label)) {
    case unit::fraction:
      return "%";
    case unit::labelled:
      return std::string(label);
    default:
      return {};
  }
}

}  // namespace pinbench
