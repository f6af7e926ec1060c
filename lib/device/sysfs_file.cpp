#include "device/sysfs_file.hpp"

#include <charconv>
#include <fstream>

#include "core/text.hpp"

namespace pinbench::device {

std::optional<std::string> read_sysfs_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::string();
  return std::string(trim(line));
}

std::optional<int> parse_sysfs_int(std::string_view text) {
  text = trim(text);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace pinbench::device
