// NUMA topology as Linux sysfs reports it, and which node a run's device belongs to. Pure file
// reading under a sysfs root that tests point at fixture folders; placing memory and threads on
// a node is device/numa_placement.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/backend.hpp"

namespace pinbench::device {

/// A sysfs cpu or node list ("0-15,32-47", "0-7:2" = every second one, "3", "" = none) as
/// sorted, distinct numbers; nothing when the text is malformed. Blanks around items are ignored.
[[nodiscard]] std::optional<std::vector<int>> parse_cpulist(std::string_view text);

/// <sysfs_root>/devices/system/node/online as node numbers; empty when unreadable (no NUMA
/// information: a kernel without NUMA, a sandbox without sysfs).
[[nodiscard]] std::vector<int> online_nodes(const std::string& sysfs_root = "/sys");

/// <sysfs_root>/devices/system/node/node<N>/cpulist as written there (trimmed); nothing when
/// unreadable.
[[nodiscard]] std::optional<std::string> node_cpulist(int node,
                                                      const std::string& sysfs_root = "/sys");

/// What sysfs says of a PCI device's place: <sysfs_root>/bus/pci/devices/<address>/numa_node
/// (-1 there = the firmware does not say: no node) and local_cpulist.
struct pci_numa {
  std::optional<int> node;
  std::optional<std::string> local_cpus;
  std::string reason;  ///< why node is absent; "" when present
};
/// `bus_id` in CUDA's, NVML's or sysfs's spelling.
[[nodiscard]] pci_numa read_pci_numa(std::string_view bus_id,
                                     const std::string& sysfs_root = "/sys");

/// `run --numa`: auto (the device's node), none (no placement), or a node number.
struct numa_request {
  enum class mode { automatic, none, node };
  mode how = mode::automatic;
  int node = -1;  ///< mode::node only
  /// "auto", "none" or the node number: what the result records as `requested`.
  [[nodiscard]] std::string text() const;
};

/// "auto", "none" or a node number; throws input_error naming `--numa` for other text, and for
/// a node not in `online` (naming the online nodes).
[[nodiscard]] numa_request parse_numa_request(std::string_view text,
                                              const std::vector<int>& online);

/// Where a run's host buffers and copying threads belong: decided once per run for its device.
struct numa_target {
  std::optional<int> node;  ///< none: no placement (none asked, or nothing known)
  std::string cpus;         ///< the node's (or the GPU's local) cpu list, "" when unknown
  std::string reason = "no placement asked";  ///< how the node was chosen, or why there is none
  std::string requested = "none";             ///< numa_request::text()
};

/// The target for `request` on the device `d` describes: auto takes the GPU's PCI numa_node and
/// local_cpulist (CUDA), node 0 for the host backend's emulated device, the only node of a
/// one-node machine; none and N as asked.
[[nodiscard]] numa_target resolve_numa(const numa_request& request, const description& d,
                                       const std::string& sysfs_root = "/sys");

}  // namespace pinbench::device
