// Checks on CUDA runtime calls: a throwing form that names file, line and the call as written,
// and a no-throw form for destructors that logs to stderr instead.
#pragma once

#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

namespace pinbench::device::cuda {

/// "out of memory (cudaErrorMemoryAllocation)".
[[nodiscard]] std::string describe_error(cudaError_t status);

/// `file` from the repository root on: "/src/pinbench/lib/device/cuda/x.cpp" ->
/// "lib/device/cuda/x.cpp".
[[nodiscard]] std::string_view source_path(std::string_view file) noexcept;

/// Throws out_of_memory for cudaErrorMemoryAllocation (clearing the runtime's last error, so a
/// later check does not see it again) and device_error for every other failure, with the message
/// "lib/device/cuda/x.cpp:42: cudaMalloc(&p, n) failed: out of memory (cudaErrorMemoryAllocation)".
[[noreturn]] void throw_error(cudaError_t status, const char* file, int line, const char* call);

/// Logs a failed call to stderr and returns false; silent while the runtime is unloading at exit.
bool log_error(cudaError_t status, const char* file, int line, const char* call) noexcept;

inline void check(cudaError_t status, const char* file, int line, const char* call) {
  if (status != cudaSuccess) [[unlikely]]
    throw_error(status, file, line, call);
}

inline bool check_nothrow(cudaError_t status, const char* file, int line,
                          const char* call) noexcept {
  if (status == cudaSuccess) [[likely]]
    return true;
  return log_error(status, file, line, call);
}

}  // namespace pinbench::device::cuda

/// Throws (see throw_error) when the CUDA runtime call fails.
#define PINBENCH_CUDA_CHECK(call) ::pinbench::device::cuda::check((call), __FILE__, __LINE__, #call)

/// For destructors and other no-throw paths: logs a failure to stderr; evaluates to true on
/// success.
#define PINBENCH_CUDA_CHECK_NOTHROW(call) \
  ::pinbench::device::cuda::check_nothrow((call), __FILE__, __LINE__, #call)
