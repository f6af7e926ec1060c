// The host link of a PCI device as Linux sysfs reports it, and the bandwidth ceiling it gives a
// host<->device copy. Pure text and file reading (the sysfs root is a parameter), so the tests
// check it with fixture folders on any machine.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "device/pci_address.hpp"  // sysfs_pci_address: a bus id in sysfs's spelling

namespace pinbench::device {

/// The PCIe link as sysfs reports it; a value is absent where it cannot be read (no sysfs in a
/// container, a sandbox). GPUs drop to a lower generation when idle: hence the maximum beside it.
struct pcie_link {
  std::optional<int> gen, width, max_gen, max_width;
  /// The maximum of the port above the device (its parent in sysfs), where it has link files:
  /// a gen5 GPU in a gen4 slot trains at gen4.
  std::optional<int> port_max_gen, port_max_width;
};

/// The bandwidth a host<->device copy is judged against, in GB/s per direction: either a
/// figure with where it came from, or none with the reason.
struct link_ceiling {
  std::optional<double> gbps = {};
  std::string source =
      {};  ///< with gbps: "PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per direction"
  std::string reason = {};  ///< without gbps: why there is none
  /// No link to read (the host backend): the transfer engine measures a host memcpy of each
  /// case's size in the same run and takes that as the ceiling.
  bool measure_host_memcpy = false;
};

/// A sysfs link speed ("32.0 GT/s PCIe", "8 GT/s") -> PCIe generation (2.5 GT/s -> 1 ... 64 -> 6,
/// 128 -> 7); none for text that is not a known rate ("Unknown", "12 GT/s").
[[nodiscard]] std::optional<int> pcie_gen_from_speed(std::string_view sysfs_speed);

/// GB/s per direction of a PCIe link of generation `gen` and `width` lanes, after the line
/// encoding of that generation; none for a generation outside 1..7 or a width below 1.
[[nodiscard]] std::optional<double> pcie_gbps_per_direction(int gen, int width);

/// The line encoding of a generation, for the ceiling's source: "8b/10b", "128b/130b",
/// "FLIT 242/256".
[[nodiscard]] std::string_view pcie_encoding_name(int gen);

/// The ceiling of a PCIe link of generation `gen` and `width` lanes, read from `where`
/// ("sysfs", "NVML"): "PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per direction". None, with
/// the reason, for a generation or width it has no figure for.
[[nodiscard]] link_ceiling pcie_link_ceiling(int gen, int width, std::string_view where);

/// The link of the device `bus_id` (CUDA's "0000:17:00.0" or NVML's "00000000:17:00.0"), read from
/// <sysfs_root>/bus/pci/devices/<address>/{current,max}_link_{speed,width}, and the port
/// above it; each value absent when unreadable.
[[nodiscard]] pcie_link read_pcie_link(std::string_view bus_id,
                                       const std::string& sysfs_root = "/sys");

/// The ceiling of `link`: the lower of the device's and its port's maximum generation and
/// width (what the link trains to under load; an idle GPU's current speed is lower, and is
/// named in the source when it differs). None, with the reason, where the link is not a
/// readable PCIe link (a Grace Hopper's NVLink-C2C has no PCIe link files). `address` names
/// the device in the texts.
[[nodiscard]] link_ceiling pcie_ceiling(const pcie_link& link, std::string_view address);

/// read_pcie_link then pcie_ceiling.
[[nodiscard]] link_ceiling read_link_ceiling(std::string_view bus_id,
                                             const std::string& sysfs_root = "/sys");

}  // namespace pinbench::device
