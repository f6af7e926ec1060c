// Where the allocators get device memory from: cudaMalloc on CUDA, an address-only arena of a
// fixed capacity on the host backend. Policy results are identical on both; latencies are not.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace pinbench::device {
class backend;
}

namespace pinbench::alloc {

class upstream {
 public:
  virtual ~upstream() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// How an out-of-memory message names the device where PyTorch says "GPU 0" (at the start
  /// of a sentence): "GPU 1" on cuda, "Host-emulated device" on the host backend and the arena.
  [[nodiscard]] virtual std::string device_label() const = 0;

  /// cudaMalloc semantics: a pointer aligned to 512 bytes, or nullptr when the memory is not
  /// there (never throws for that). Counts against capacity().
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  /// cudaFree semantics: synchronises the device, then returns the memory.
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  /// Waits for all device work (what the caching allocator's "synchronize all streams" costs).
  virtual void synchronize() = 0;

  [[nodiscard]] virtual std::size_t capacity() const noexcept = 0;
  [[nodiscard]] virtual std::size_t used() const noexcept = 0;  ///< bytes allocated + mapped

  // Virtual memory, for expandable segments: reserve an address range once, then map and unmap
  // physical chunks (multiples of granularity()) inside it.
  [[nodiscard]] virtual bool supports_virtual_memory() const noexcept = 0;
  [[nodiscard]] virtual std::size_t granularity() const noexcept { return std::size_t{2} << 20; }
  /// Reserves address space only (no capacity used). Throws device_error when impossible.
  [[nodiscard]] virtual void* reserve_address(std::size_t bytes) = 0;
  virtual void release_address(void* base, std::size_t bytes) = 0;
  /// Maps physical memory at [addr, addr + bytes); false when capacity is exhausted.
  [[nodiscard]] virtual bool map(void* addr, std::size_t bytes) = 0;
  virtual void unmap(void* addr, std::size_t bytes) = 0;
};

/// An arena that hands out addresses from a reserved, never-touched range of `capacity` bytes
/// (first fit over free ranges). allocate/map cost no real memory, so a 80 GiB "device" can be
/// emulated on a small machine. Supports virtual memory.
[[nodiscard]] std::unique_ptr<upstream> make_arena_upstream(std::size_t capacity);

/// The backend's raw device memory (device_malloc / device_free), limited to `capacity` bytes
/// (0 = the device's total). Supports virtual memory where the backend does
/// (device::backend::supports_virtual_memory), with the backend's granularity.
[[nodiscard]] std::unique_ptr<upstream> make_backend_upstream(device::backend& dev,
                                                              std::size_t capacity);

}  // namespace pinbench::alloc
