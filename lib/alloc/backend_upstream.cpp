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
        capacity_(capacity != 0 ? capacity : dev.device_memory().total_bytes),
        vm_(dev.supports_virtual_memory()),
        granularity_(granularity_of(dev)) {}

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] std::string device_label() const override {
    if (dev_.emulated()) return "Host-emulated device";
    return fmt::format("GPU {}", dev_.describe().index.value_or(0));
  }

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

  // Virtual memory through the backend (CUDA: the driver's cuMemMap family). Mapped bytes
  // count against the capacity, address reservations do not.
  [[nodiscard]] bool supports_virtual_memory() const noexcept override { return vm_; }
  [[nodiscard]] std::size_t granularity() const noexcept override { return granularity_; }

  [[nodiscard]] void* reserve_address(std::size_t bytes) override {
    if (!vm_) unsupported();
    return dev_.reserve_virtual(round_up(bytes));
  }

  void release_address(void* base, std::size_t bytes) override {
    if (!vm_) unsupported();
    if (base != nullptr) dev_.release_virtual(base, round_up(bytes));
  }

  [[nodiscard]] bool map(void* addr, std::size_t bytes) override {
    if (!vm_) unsupported();
    const std::size_t rounded = round_up(bytes);
    if (rounded > capacity_ - used_) return false;  // the per-process cap
    if (!dev_.map_physical(addr, rounded)) return false;
    used_ += rounded;
    return true;
  }

  void unmap(void* addr, std::size_t bytes) override {
    if (!vm_) unsupported();
    const std::size_t rounded = round_up(bytes);
    dev_.unmap_physical(addr, rounded);
    used_ -= rounded < used_ ? rounded : used_;
  }

 private:
  [[noreturn]] void unsupported() const {
    throw device_error(fmt::format(
        "expandable segments need the driver's virtual memory API, which the {} backend "
        "does not offer here",
        name_));
  }

  [[nodiscard]] std::size_t round_up(std::size_t bytes) const noexcept {
    return (bytes + granularity_ - 1) / granularity_ * granularity_;
  }

  /// The backend's granularity, or 2 MiB (the upstream interface's default) without one.
  static std::size_t granularity_of(const device::backend& dev) {
    if (!dev.supports_virtual_memory()) return std::size_t{2} << 20;
    const std::size_t g = dev.physical_granularity();
    return g != 0 ? g : std::size_t{2} << 20;
  }

  device::backend& dev_;
  std::string name_;
  std::size_t capacity_;
  bool vm_;
  std::size_t granularity_;
  std::size_t used_ = 0;
};

}  // namespace

std::unique_ptr<upstream> make_backend_upstream(device::backend& dev, std::size_t capacity) {
  return std::make_unique<backend_upstream>(dev, capacity);
}

}  // namespace pinbench::alloc
