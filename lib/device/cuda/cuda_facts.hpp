// Pure conversions of what CUDA and Linux sysfs report about a GPU into the result's terms.
// No CUDA calls here, so the host test suite checks them on any machine.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "device/backend.hpp"
#include "device/pci_address.hpp"

namespace pinbench::device::cuda {

/// 13000 -> "13.0", 12040 -> "12.4" (cudaDriverGetVersion / cudaRuntimeGetVersion encoding).
[[nodiscard]] std::string format_cuda_version(int version);

/// nvidia-smi's spelling of cudaDeviceProp::uuid: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
[[nodiscard]] std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes);

/// The bus id's sysfs spelling; its home is device/pci_address.hpp (used without CUDA too).
using device::sysfs_pci_address;

/// A sysfs link speed ("32.0 GT/s PCIe", "8 GT/s") -> PCIe generation (2.5 GT/s -> 1 ... 64 -> 6).
[[nodiscard]] std::optional<int> pcie_gen_from_speed(std::string_view sysfs_speed);

/// The link read from <sysfs_devices>/<address>/{current,max}_link_{speed,width}; each value
/// absent when unreadable (no sysfs in a container, a sandbox...).
[[nodiscard]] pcie_link read_pcie_link(const std::string& sysfs_devices,
                                            std::string_view cuda_bus_id);

}  // namespace pinbench::device::cuda
