// The backend's own device memory as the allocators' upstream: cudaMalloc/cudaFree on CUDA,
// the host backend's accounted memory elsewhere, limited to a per-process capacity.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "alloc/upstream.hpp"
#include "core/error.hpp"
#include "device/backend.hpp"

namespace pinbench::alloc {

namespace {

class backend_upstream final : public upstream {
 public:
  backend_upstream(device::backend& dev, std::size_t capacity)
      : dev_(dev),
        name_(dev.name()),
        capacity_(capacity != 0 ? capacity : dev.device_memory().total_bytes) {}

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }

  [[nodiscard]] void* allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    if (bytes > capacity_ - used_) return nullptr;  // the per-process cap, as a failed cudaMalloc
    void* ptr = nullptr;
    try {
      ptr = dev_.device_malloc(bytes);
    } catch (const pinbench::out_of_memory&) {
      return nullptr;
    }
    if (ptr == nullptr) return nullptr;
    used_ += bytes;
    return ptr;
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    if (ptr == nullptr) return;
    dev_.device_free(ptr);  // synchronises, as cudaFree does
    used_ -= bytes < used_ ? bytes : used_;
  }

  void synchronize() override { dev_.synchronize(); }

  [[nodiscard]] std::size_t capacity() const noexcept override { return capacity_; }
  [[nodiscard]] std::size_t used() const noexcept override { return used_; }

  [[nodiscard]] bool supports_virtual_memory() const noexcept override { return false; }
  [[nodiscard]] void* reserve_address(std::size_t) override { unsupported(); }
  void release_address(void*, std::size_t) override { unsupported(); }
  [[nodiscard]] bool map(void*, std::size_t) override { unsupported(); }
  void unmap(void*, std::size_t) override { unsupported(); }

 private:
  [[noreturn]] static void unsupported() {
    throw device_error(
        "expandable segments need the driver's virtual memory API, not implemented on this "
        "backend yet");
  }

  device::backend& dev_;
  std::string name_;
  std::size_t capacity_;
  std::size_t used_ = 0;
};

}  // namespace

std::unique_ptr<upstream> make_backend_upstream(device::backend& dev, std::size_t capacity) {
  return std::make_unique<backend_upstream>(dev, capacity);
}

}  // namespace pinbench::alloc
