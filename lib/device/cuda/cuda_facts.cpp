#include "device/cuda/cuda_facts.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace pinbench::device::cuda {

std::string format_cuda_version(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 0x0f];
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return std::string(trim(line));
}

std::optional<int> parse_width(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == 'x' || text.front() == 'X')) text.remove_prefix(1);
  int width = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), width);
  if (ec != std::errc() || end != text.data() + text.size() || width < 0) return std::nullopt;
  return width;
}

}  // namespace

std::optional<int> pcie_gen_from_speed(std::string_view sysfs_speed) {
  const std::string_view text = trim(sysfs_speed);
  double gts = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), gts);
  if (ec != std::errc() || end == text.data() || !(gts > 0)) return std::nullopt;
  // Per-lane transfer rate of each generation; PCIe 7 is listed so a future card is not "null".
  static constexpr double rates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
  for (std::size_t i = 0; i < std::size(rates); ++i)
    if (std::fabs(gts - rates[i]) < 0.05 * rates[i]) return static_cast<int>(i + 1);
  return std::nullopt;
}

pcie_link read_pcie_link(const std::string& sysfs_devices, std::string_view cuda_bus_id) {
  pcie_link out;
  const std::string address = sysfs_pci_address(cuda_bus_id);
  if (address.empty()) return out;
  const std::string dir = sysfs_devices + "/" + address + "/";
  const auto gen = [&](const char* name) -> std::optional<int> {
    const auto line = read_line(dir + name);
    return line ? pcie_gen_from_speed(*line) : std::nullopt;
  };
  const auto width = [&](const char* name) -> std::optional<int> {
    const auto line = read_line(dir + name);
    return line ? parse_width(*line) : std::nullopt;
  };
  // The current speed is what the link runs at when read: GPUs drop to a lower generation when
  // idle, which is why the maximum is reported beside it.
  out.gen = gen("current_link_speed");
  out.width = width("current_link_width");
  out.max_gen = gen("max_link_speed");
  out.max_width = width("max_link_width");
  return out;
}

}  // namespace pinbench::device::cuda
