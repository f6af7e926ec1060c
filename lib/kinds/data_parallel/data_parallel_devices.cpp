// The devices of a data_parallel case and the caching allocator on each.
#include "kinds/data_parallel/data_parallel_devices.hpp"

#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::kinds::data_parallel {

tensor::tensor(alloc::device_allocator& a, std::size_t bytes)
    : owner_(&a), data_(static_cast<std::byte*>(a.allocate(bytes, 0))), bytes_(bytes) {}

tensor::tensor(tensor&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

tensor& tensor::operator=(tensor&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void tensor::reset() noexcept {
  if (owner_ != nullptr && data_ != nullptr) {
    try {
      owner_->deallocate(data_);
    } catch (...) {  // NOLINT(bugprone-empty-catch): only an unknown pointer throws; ours is known
    }
  }
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

device_slot::device_slot(std::unique_ptr<device::backend> owned, device::backend& dev)
    : owned_(std::move(owned)),
      dev_(dev),
      // The backend's real memory, not an address-only arena: the copies and sums touch it.
      upstream_(alloc::make_backend_upstream(dev_, 0)),
      allocator_(alloc::make_caching_allocator(*upstream_, alloc::config{})),
      stream_(dev_.create_stream()) {}

device_slot::~device_slot() {
  try {
    dev_.synchronize();  // nothing may still use memory the allocator gives back
  } catch (...) {        // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

peak_memory device_slot::peaks() const {
  const alloc::memory_stats s = allocator_->stats();
  return {static_cast<std::uint64_t>(s.allocated_bytes.all.peak),
          static_cast<std::uint64_t>(s.reserved_bytes.all.peak)};
}

device_set open_devices(measure::run_context& ctx, int count) {
  const int visible = ctx.platform != nullptr ? ctx.platform->device_count() : 1;
  if (count > visible)
    throw unsupported_error(fmt::format("needs {} devices, this process sees {}", count, visible));
  device_set out;
  if (ctx.platform == nullptr) {
    if (count > 1)
      throw unsupported_error(
          fmt::format("needs {} devices, and this run can open none beyond its own", count));
    out.push_back(std::make_unique<device_slot>(nullptr, ctx.dev));
    return out;
  }
  for (int k = 0; k < count; ++k) {
    auto opened = ctx.platform->open(k);
    if (opened == nullptr) throw device_error(fmt::format("device {} could not be opened", k));
    device::backend& dev = *opened;
    out.push_back(std::make_unique<device_slot>(std::move(opened), dev));
  }
  return out;
}

}  // namespace pinbench::kinds::data_parallel
