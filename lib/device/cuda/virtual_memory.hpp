// The driver's virtual memory API (cuMemAddressReserve, cuMemCreate, cuMemMap, ...) reached
// through cudaGetDriverEntryPointByVersion, so that pinbench never links libcuda itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace pinbench::device::cuda {

/// Reserves address ranges and maps physical chunks into them on one device. The device's
/// context must be current on the calling thread (the backend selects it first).
class virtual_memory {
 public:
  /// Never throws: when the driver, the device or an entry point is missing, usable() is false
  /// and reason() says why.
  explicit virtual_memory(int device) noexcept;
  /// Unmaps and frees whatever is still mapped or reserved.
  ~virtual_memory();
  virtual_memory(const virtual_memory&) = delete;
  virtual_memory& operator=(const virtual_memory&) = delete;

  [[nodiscard]] bool usable() const noexcept { return api_ != nullptr; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// cuMemGetAllocationGranularity (minimum) for pinned device memory; 2 MiB on H100/H200.
  [[nodiscard]] std::size_t granularity() const noexcept { return granularity_; }

  /// Throws device_error (out_of_memory when the address space is exhausted).
  [[nodiscard]] void* reserve(std::size_t bytes);
  void release(void* ptr, std::size_t bytes);
  /// cuMemCreate + cuMemMap + cuMemSetAccess; false on CUDA_ERROR_OUT_OF_MEMORY.
  [[nodiscard]] bool map(void* ptr, std::size_t bytes);
  void unmap(void* ptr, std::size_t bytes);

  struct api;  // the entry points (defined in the .cpp, where cuda.h is included)

 private:
  struct chunk {
    std::uint64_t handle;  // CUmemGenericAllocationHandle
    std::size_t bytes;
  };

  int device_;
  std::unique_ptr<api> api_;
  std::string reason_;
  std::size_t granularity_ = 0;
  std::mutex mutex_;
  std::unordered_map<std::uintptr_t, chunk> mapped_;          // by chunk address
  std::unordered_map<std::uintptr_t, std::size_t> reserved_;  // by range base
};

}  // namespace pinbench::device::cuda
