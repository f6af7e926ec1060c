#include "dist/environment.hpp"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::dist {

namespace {

template <typename T>
std::optional<T> parse_whole(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> environment::get(const char* name) const {
  const char* value = getenv_ ? getenv_(name) : std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::string> environment::get_either(const char* name, const char* older) const {
  if (auto value = get(name)) return value;
  return get(older);
}

std::optional<int> environment::integer(const char* name) const {
  auto text = get(name);
  if (!text) return std::nullopt;
  if (auto value = parse(*text)) return value;
  throw input_error({}, fmt::format("environment {}", name),
                    fmt::format("expected an integer, got \"{}\"", *text));
}

std::optional<int> environment::parse(std::string_view text) {
  return parse_whole<int>(text);
}

std::optional<std::uint64_t> environment::parse_unsigned(std::string_view text) {
  return parse_whole<std::uint64_t>(text);
}

}  // namespace pinbench::dist
