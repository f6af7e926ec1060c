// Launchers for the CUDA backend's two kernels (defined in kernels.cu). Plain C++: host code
// includes this without nvcc. Each returns the launch's own status and enqueues one thread.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace pinbench::device::cuda {

/// Kernel outcomes written into a gate slot's second word when the gate kernel exits.
inline constexpr std::uint32_t gate_armed = 1;      ///< set by the host before the launch
inline constexpr std::uint32_t gate_released = 2;   ///< the host released it
inline constexpr std::uint32_t gate_timed_out = 3;  ///< nobody released it within the timeout

/// Loads both kernels into the current device's context now (cudaFuncGetAttributes on each).
/// Under lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a kernel's first
/// launch loads its module, which may wait for the device to go idle: a spin kernel launched for
/// the first time while gate kernels spin would stall until the gates time out.
[[nodiscard]] cudaError_t load_kernels() noexcept;

/// Busy device work: spins on %globaltimer until `duration_ns` have passed.
[[nodiscard]] cudaError_t launch_spin_kernel(cudaStream_t stream,
                                             std::uint64_t duration_ns) noexcept;

/// Holds `stream` until the host writes a non-zero value into `slot[0]` (mapped pinned host
/// memory; `slot` is its device pointer), or until `timeout_ns` have passed, then writes
/// gate_released or gate_timed_out into `slot[1]`.
[[nodiscard]] cudaError_t launch_gate_kernel(cudaStream_t stream, std::uint32_t* slot,
                                             std::uint64_t timeout_ns) noexcept;

}  // namespace pinbench::device::cuda
