// The allocators' out-of-memory messages.
#include "alloc/oom.hpp"

#include <fmt/format.h>

namespace pinbench::alloc::detail {

std::string format_size(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes <= 1024) return fmt::format("{} bytes", bytes);
  if (bytes <= (std::uint64_t{1} << 20)) return fmt::format("{:.2f} KiB", b / 1024.0);
  if (bytes <= (std::uint64_t{1} << 30)) return fmt::format("{:.2f} MiB", b / 1048576.0);
  return fmt::format("{:.2f} GiB", b / 1073741824.0);
}

std::uint64_t device_free_bytes(const upstream& up) noexcept {
  const std::size_t capacity = up.capacity();
  const std::size_t used = up.used();
  return used < capacity ? capacity - used : 0;
}

namespace {

std::uint64_t unallocated(const oom_figures& f) {
  return f.reserved_bytes > f.allocated_bytes ? f.reserved_bytes - f.allocated_bytes : 0;
}

}  // namespace

oom_error make_caching_oom_error(const upstream& up, const oom_figures& f) {
  const std::uint64_t free_bytes = device_free_bytes(up);
  const std::string allowed =
      f.allowed_bytes ? format_size(*f.allowed_bytes) + " allowed; " : std::string();
  // The two double spaces near the end are PyTorch's.
  std::string message = fmt::format(
      "CUDA out of memory. Tried to allocate {}. {} has a total capacity of {} of which {} is "
      "free. {}Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch "
      "but unallocated. If reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
      "documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
      format_size(f.tried_bytes), up.device_label(), format_size(up.capacity()),
      format_size(free_bytes), allowed, format_size(f.allocated_bytes),
      format_size(unallocated(f)));
  return oom_error(message, f.tried_bytes, f.allocated_bytes, f.reserved_bytes, free_bytes);
}

oom_error make_too_large_error(std::uint64_t requested_bytes) {
  return oom_error("CUDA out of memory. Tried to allocate more than 1EB memory.", requested_bytes,
                   0, 0, 0);
}

oom_error make_raw_oom_error(const upstream& up, const oom_figures& f) {
  const std::uint64_t free_bytes = device_free_bytes(up);
  std::string message = fmt::format(
      "CUDA out of memory. Tried to allocate {}. {} has a total capacity of {} of which {} is "
      "free. Of the allocated memory {} is allocated by the raw allocator (cudaMalloc per "
      "request), which caches nothing.",
      format_size(f.tried_bytes), up.device_label(), format_size(up.capacity()),
      format_size(free_bytes), format_size(f.allocated_bytes));
  return oom_error(message, f.tried_bytes, f.allocated_bytes, f.reserved_bytes, free_bytes);
}

}  // namespace pinbench::alloc::detail
