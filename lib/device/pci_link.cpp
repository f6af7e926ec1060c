#include "device/pci_link.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/text.hpp"
#include "device/sysfs_file.hpp"

namespace pinbench::device {

namespace {

// "16", or "x16" as some tools write it.
std::optional<int> parse_width(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == 'x' || text.front() == 'X')) text.remove_prefix(1);
  const auto width = parse_sysfs_int(text);
  return width && *width > 0 ? width : std::nullopt;
}

// Per-lane transfer rate of each generation, GT/s (PCI-SIG's published rates).
constexpr double lane_gts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
constexpr int known_generations = static_cast<int>(std::size(lane_gts));

// Payload bits per line bit. Gen1-2: 8b/10b. Gen3-5: 128b/130b. Gen6 on: FLIT mode with 1b/1b
// coding, a 256-byte flit carrying 236 bytes of TLP and 6 of DLLP, 8 of CRC and 6 of FEC, so
// 242/256 of the line is link traffic (PCIe 6.0 base specification, FLIT mode; summarized e.g.
// at https://blog.csdn.net/weixin_43770660/article/details/141707780). Only TLP bytes carry
// data (236/256); 242/256 keeps the ceiling an upper bound, as the others are.
double encoding_efficiency(int gen) {
  if (gen <= 2) return 8.0 / 10.0;
  if (gen <= 5) return 128.0 / 130.0;
  return 242.0 / 256.0;
}

std::optional<int> lower_of(std::optional<int> a, std::optional<int> b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

}  // namespace

std::optional<int> pcie_gen_from_speed(std::string_view sysfs_speed) {
  const std::string_view text = trim(sysfs_speed);
  double gts = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), gts);
  if (ec != std::errc() || end == text.data() || !(gts > 0)) return std::nullopt;
  // The unit must follow: "8 GT/s" is a rate, "8" alone or "8 MB/s" is not.
  if (trim(std::string_view(end, static_cast<std::size_t>(text.data() + text.size() - end)))
          .substr(0, 4) != "GT/s")
    return std::nullopt;
  for (int i = 0; i < known_generations; ++i)
    if (std::fabs(gts - lane_gts[i]) < 0.05 * lane_gts[i]) return i + 1;
  return std::nullopt;
}

std::optional<double> pcie_gbps_per_direction(int gen, int width) {
  if (gen < 1 || gen > known_generations || width < 1) return std::nullopt;
  // GT/s per lane x lanes = Gbit/s on the line; x encoding = payload Gbit/s; / 8 = GB/s.
  return lane_gts[gen - 1] * width * encoding_efficiency(gen) / 8.0;
}

std::string_view pcie_encoding_name(int gen) {
  if (gen <= 2) return "8b/10b";
  if (gen <= 5) return "128b/130b";
  return "FLIT 242/256";
}

pcie_link read_pcie_link(std::string_view bus_id, const std::string& sysfs_root) {
  namespace fs = std::filesystem;
  pcie_link out;
  const std::string address = sysfs_pci_address(bus_id);
  if (address.empty()) return out;
  const fs::path dir = fs::path(sysfs_root) / "bus" / "pci" / "devices" / address;
  const auto gen = [](const fs::path& file) -> std::optional<int> {
    const auto line = read_sysfs_line(file);
    return line ? pcie_gen_from_speed(*line) : std::nullopt;
  };
  const auto width = [](const fs::path& file) -> std::optional<int> {
    const auto line = read_sysfs_line(file);
    return line ? parse_width(*line) : std::nullopt;
  };
  out.gen = gen(dir / "current_link_speed");
  out.width = width(dir / "current_link_width");
  out.max_gen = gen(dir / "max_link_speed");
  out.max_width = width(dir / "max_link_width");
  // bus/pci/devices/<address> links to /sys/devices/pci<root>/.../<port>/<address>.
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (!ec && real.has_parent_path()) {
    out.port_max_gen = gen(real.parent_path() / "max_link_speed");
    out.port_max_width = width(real.parent_path() / "max_link_width");
  }
  return out;
}

link_ceiling pcie_link_ceiling(int gen, int width, std::string_view where) {
  const auto gbps = pcie_gbps_per_direction(gen, width);
  if (!gbps) return {.reason = fmt::format("no figure for a PCIe gen{} x{} link", gen, width)};
  return {.gbps = gbps,
          .source = fmt::format("PCIe gen{} x{} ({}, {}): {:.1f} GB/s per direction", gen, width,
                                where, pcie_encoding_name(gen), *gbps)};
}

link_ceiling pcie_ceiling(const pcie_link& link, std::string_view address) {
  link_ceiling out;
  // The maximum is what the link trains to under load; the current value stands in only where
  // the maximum is unreadable.
  const auto gen = lower_of(link.max_gen ? link.max_gen : link.gen, link.port_max_gen);
  const auto width = lower_of(link.max_width ? link.max_width : link.width, link.port_max_width);
  if (!gen || !width) {
    out.reason = fmt::format(
        "no readable PCIe link for {} in sysfs (a host link that is not PCIe, such as Grace "
        "Hopper's NVLink-C2C, or no /sys in this container)",
        address);
    return out;
  }
  out = pcie_link_ceiling(*gen, *width, "sysfs");
  if (out.gbps && link.gen && link.width && (*link.gen != *gen || *link.width != *width))
    out.source += fmt::format("; the link read gen{} x{} at the time (an idle GPU trains down)",
                              *link.gen, *link.width);
  return out;
}

link_ceiling read_link_ceiling(std::string_view bus_id, const std::string& sysfs_root) {
  const std::string address = sysfs_pci_address(bus_id);
  if (address.empty()) return {.reason = fmt::format("\"{}\" is not a PCI bus id", bus_id)};
  return pcie_ceiling(read_pcie_link(address, sysfs_root), address);
}

}  // namespace pinbench::device
