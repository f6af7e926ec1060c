// A PCI device's address as Linux sysfs spells it, from the spellings CUDA and NVML give.
#pragma once

#include <string>
#include <string_view>

namespace pinbench::device {

/// cudaDeviceGetPCIBusId's "00000000:19:00.0" (NVML's form too) -> sysfs's "0000:19:00.0"
/// (domain printed with at least four hex digits, lower case): the folder's name under
/// /sys/bus/pci/devices. Empty when the text is not a bus id.
[[nodiscard]] std::string sysfs_pci_address(std::string_view bus_id);

}  // namespace pinbench::device
