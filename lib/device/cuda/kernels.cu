// The CUDA backend's device code: a timed busy kernel and a gate that spins on a host flag.
// Kernels and thin launchers only; everything else is host C++ (see cuda_backend.cpp).
#include "device/cuda/kernels.hpp"

#include <cuda_runtime.h>

namespace pinbench::device::cuda {

namespace {

// %globaltimer counts nanoseconds on a clock shared by all multiprocessors, so the spin lasts
// the asked wall time whatever the SM clock is doing.
__device__ __forceinline__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t duration_ns) {
  const std::uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
}

__global__ void gate_kernel(std::uint32_t* slot, std::uint64_t timeout_ns) {
  // volatile: every poll must read host memory over the bus, not a register or a cache line.
  volatile std::uint32_t* release = slot;
  volatile std::uint32_t* outcome = slot + 1;
  const std::uint64_t start = globaltimer_ns();
  std::uint32_t result = gate_released;
  while (*release == 0) {
    if (globaltimer_ns() - start >= timeout_ns) {
      result = gate_timed_out;
      break;
    }
    // Poll about once a microsecond: prompt enough, and keeps the bus nearly free for the
    // copies being measured.
    __nanosleep(1000);
  }
  __threadfence_system();
  *outcome = result;
}

}  // namespace

cudaError_t load_kernels() noexcept {
  cudaFuncAttributes attributes{};
  const cudaError_t spin = cudaFuncGetAttributes(&attributes, spin_kernel);
  if (spin != cudaSuccess) return spin;
  return cudaFuncGetAttributes(&attributes, gate_kernel);
}

cudaError_t launch_spin_kernel(cudaStream_t stream, std::uint64_t duration_ns) noexcept {
  void* args[] = {&duration_ns};
  return cudaLaunchKernel(spin_kernel, dim3(1), dim3(1), args, 0, stream);
}

cudaError_t launch_gate_kernel(cudaStream_t stream, std::uint32_t* slot,
                               std::uint64_t timeout_ns) noexcept {
  void* args[] = {&slot, &timeout_ns};
  return cudaLaunchKernel(gate_kernel, dim3(1), dim3(1), args, 0, stream);
}

}  // namespace pinbench::device::cuda
