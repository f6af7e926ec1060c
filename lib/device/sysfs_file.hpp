// Reading the one-value files of Linux sysfs (a PCI device's numa_node, its link speed and
// width, a node's cpulist), shared by device/numa and device/pci_link.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pinbench::device {

/// The file's first line without surrounding blanks; "" for an empty file (an empty cpulist),
/// nothing when it cannot be read.
[[nodiscard]] std::optional<std::string> read_sysfs_line(const std::filesystem::path& path);

/// A whole decimal integer ("16", " -1\n"); nothing for anything else ("16x", "").
[[nodiscard]] std::optional<int> parse_sysfs_int(std::string_view text);

}  // namespace pinbench::device
