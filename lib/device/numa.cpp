#include "device/numa.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/text.hpp"
#include "device/pci_address.hpp"
#include "device/sysfs_file.hpp"

namespace pinbench::device {

namespace {

// A cpu list longer than this is not a real machine's: refuse it rather than fill memory.
constexpr int max_listed_cpu = 1 << 20;

std::string node_dir(const std::string& sysfs_root) {
  return sysfs_root + "/devices/system/node";
}

}  // namespace

std::optional<std::vector<int>> parse_cpulist(std::string_view text) {
  std::vector<int> out;
  text = trim(text);
  if (text.empty()) return out;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    // "a", "a-b" or "a-b:stride".
    const auto dash = item.find('-');
    const auto colon = item.find(':');
    if (colon != std::string_view::npos && dash == std::string_view::npos) return std::nullopt;
    const auto first = parse_sysfs_int(item.substr(0, dash));
    std::optional<int> last = first;
    std::optional<int> stride = 1;
    if (dash != std::string_view::npos) {
      last = parse_sysfs_int(item.substr(
          dash + 1, colon == std::string_view::npos ? std::string_view::npos : colon - dash - 1));
      if (colon != std::string_view::npos) stride = parse_sysfs_int(item.substr(colon + 1));
    }
    if (!first || !last || !stride || *first < 0 || *last < *first || *last > max_listed_cpu ||
        *stride < 1)
      return std::nullopt;
    for (int cpu = *first; cpu <= *last; cpu += *stride) out.push_back(cpu);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> online_nodes(const std::string& sysfs_root) {
  const auto line = read_sysfs_line(node_dir(sysfs_root) + "/online");
  if (!line) return {};
  return parse_cpulist(*line).value_or(std::vector<int>{});
}

std::optional<std::string> node_cpulist(int node, const std::string& sysfs_root) {
  return read_sysfs_line(fmt::format("{}/node{}/cpulist", node_dir(sysfs_root), node));
}

pci_numa read_pci_numa(std::string_view bus_id, const std::string& sysfs_root) {
  pci_numa out;
  const std::string address = sysfs_pci_address(bus_id);
  if (address.empty()) {
    out.reason = fmt::format("\"{}\" is not a PCI bus id", bus_id);
    return out;
  }
  const std::string dir = sysfs_root + "/bus/pci/devices/" + address;
  out.local_cpus = read_sysfs_line(dir + "/local_cpulist");
  const auto line = read_sysfs_line(dir + "/numa_node");
  const auto node = line ? parse_sysfs_int(*line) : std::nullopt;
  if (!line)
    out.reason = "no " + dir + "/numa_node";
  else if (!node)
    out.reason = fmt::format("{}/numa_node reads \"{}\", not a number", dir, *line);
  else if (*node < 0)
    out.reason =
        fmt::format("the PCI device {} reports no NUMA node (numa_node {})", address, *node);
  else
    out.node = node;
  return out;
}

std::string numa_request::text() const {
  switch (how) {
    case mode::automatic:
      return "auto";
    case mode::none:
      return "none";
    case mode::node:
      break;
  }
  return std::to_string(node);
}

numa_request parse_numa_request(std::string_view text, const std::vector<int>& online) {
  if (text == "auto") return {};
  if (text == "none") return {numa_request::mode::none, -1};
  const auto node = parse_sysfs_int(text);
  if (!node || *node < 0 || text != trim(text))
    throw input_error({}, "--numa",
                      fmt::format("expected auto, none or a NUMA node number, got \"{}\"", text));
  if (std::find(online.begin(), online.end(), *node) == online.end()) {
    std::string names;
    for (int n : online) names += (names.empty() ? "" : ", ") + std::to_string(n);
    throw input_error(
        {}, "--numa",
        online.empty()
            ? fmt::format("node {} is not a NUMA node of this machine: it reports none (no "
                          "/sys/devices/system/node/online)",
                          *node)
            : fmt::format("node {} is not a NUMA node of this machine; online: {}", *node, names));
  }
  return {numa_request::mode::node, *node};
}

numa_target resolve_numa(const numa_request& request, const description& d,
                         const std::string& sysfs_root) {
  numa_target t;
  t.requested = request.text();
  const auto place_on = [&](int node, std::string reason) {
    t.node = node;
    t.cpus = node_cpulist(node, sysfs_root).value_or("");
    t.reason = std::move(reason);
  };
  if (request.how == numa_request::mode::none) {
    t.reason = "--numa none: buffers and threads left where the kernel puts them";
    return t;
  }
  if (request.how == numa_request::mode::node) {
    place_on(request.node, fmt::format("--numa {}", request.node));
    return t;
  }
  const std::vector<int> nodes = online_nodes(sysfs_root);
  if (nodes.empty()) {
    t.reason = "no NUMA information (" + node_dir(sysfs_root) + "/online unreadable)";
    return t;
  }
  const int first = std::find(nodes.begin(), nodes.end(), 0) != nodes.end() ? 0 : nodes.front();
  if (d.emulated) {
    place_on(first, fmt::format("host backend: the emulated device is given node {}", first));
    return t;
  }
  const pci_numa pci = d.pci_bus_id ? read_pci_numa(*d.pci_bus_id, sysfs_root)
                                    : pci_numa{{}, {}, "the device has no PCI bus id"};
  if (pci.node) {
    place_on(*pci.node, fmt::format("the GPU's PCI device ({}) is on node {}",
                                    sysfs_pci_address(*d.pci_bus_id), *pci.node));
    // The GPU's own neighbours when sysfs lists them (they may be fewer than the node's).
    if (pci.local_cpus && !pci.local_cpus->empty()) t.cpus = *pci.local_cpus;
  } else if (nodes.size() == 1) {
    place_on(first, fmt::format("one NUMA node on this machine ({})", pci.reason));
  } else {
    t.reason = pci.reason + ": no node chosen; --numa N picks one";
  }
  return t;
}

}  // namespace pinbench::device
