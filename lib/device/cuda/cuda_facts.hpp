// Pure conversions of what CUDA reports about a GPU into the result's terms (the PCIe link in
// sysfs: device/pci_link.hpp).
// No CUDA calls here, so the host test suite checks them on any machine.
#pragma once

#include <array>
#include <string>

namespace pinbench::device::cuda {

/// 13000 -> "13.0", 12040 -> "12.4" (cudaDriverGetVersion / cudaRuntimeGetVersion encoding).
[[nodiscard]] std::string format_cuda_version(int version);

/// nvidia-smi's spelling of cudaDeviceProp::uuid: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
[[nodiscard]] std::string format_gpu_uuid(const std::array<unsigned char, 16>& bytes);

}  // namespace pinbench::device::cuda
