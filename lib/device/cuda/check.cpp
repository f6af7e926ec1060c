#include "device/cuda/check.hpp"

#include <cstdio>

#include "core/error.hpp"

namespace pinbench::device::cuda {

std::string describe_error(cudaError_t status) {
  const char* text = cudaGetErrorString(status);
  const char* name = cudaGetErrorName(status);
  return std::string(text != nullptr ? text : "unknown error") + " (" +
         (name != nullptr ? name : "cudaError " + std::to_string(static_cast<int>(status))) + ")";
}

std::string_view source_path(std::string_view file) noexcept {
  // __FILE__ is absolute under CMake; the part from the source tree's lib/ (or tests/) on is
  // what a reader of the message can find.
  std::size_t best = std::string_view::npos;
  for (std::string_view root : {std::string_view("/lib/"), std::string_view("/tests/")}) {
    const auto at = file.rfind(root);
    if (at != std::string_view::npos && (best == std::string_view::npos || at > best)) best = at;
  }
  return best == std::string_view::npos ? file : file.substr(best + 1);
}

void throw_error(cudaError_t status, const char* file, int line, const char* call) {
  std::string message = std::string(source_path(file)) + ":" + std::to_string(line) + ": " + call +
                        " failed: " + describe_error(status);
  if (status == cudaErrorMemoryAllocation) {
    // An allocation failure is not sticky, but it stays the runtime's "last error" until read:
    // clear it so that nothing later mistakes it for its own failure.
    static_cast<void>(cudaGetLastError());
    throw out_of_memory(message);
  }
  throw device_error(message);
}

bool log_error(cudaError_t status, const char* file, int line, const char* call) noexcept {
  // At process exit the static runtime may already be torn down; nothing is lost by then.
  if (status == cudaErrorCudartUnloading) return false;
  const char* name = cudaGetErrorName(status);
  const char* text = cudaGetErrorString(status);
  const std::string_view path = source_path(file != nullptr ? file : "?");
  std::fprintf(stderr, "pinbench: warning: %.*s:%d: %s failed: %s (%s)\n",
               static_cast<int>(path.size()), path.data(), line, call != nullptr ? call : "?",
               text != nullptr ? text : "unknown error", name != nullptr ? name : "?");
  return false;
}

}  // namespace pinbench::device::cuda
