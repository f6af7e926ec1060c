// The allocators' out-of-memory message.
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

oom_error make_oom_error(const upstream& up, std::string_view who, std::uint64_t tried_bytes,
                         std::uint64_t allocated_bytes, std::uint64_t reserved_bytes,
                         std::optional<std::uint64_t> allowed_bytes) {
  // The host backend and the arena only emulate a device: say so rather than blame CUDA.
  const std::string_view name = up.name();
  const std::string_view device =
      name == "arena" || name == "host" ? "host-emulated device" : "CUDA";
  const std::uint64_t free_bytes = device_free_bytes(up);
  const std::uint64_t unallocated =
      reserved_bytes > allocated_bytes ? reserved_bytes - allocated_bytes : 0;
  std::string allowed;
  if (allowed_bytes) {
    allowed = fmt::format(" {} allowed by the memory fraction.", format_size(*allowed_bytes));
  }
  std::string message = fmt::format(
      "{} out of memory. Tried to allocate {}. Device capacity {} of which {} is free.{} Of the "
      "allocated memory {} is allocated by the {} allocator, and {} is reserved but unallocated.",
      device, format_size(tried_bytes), format_size(up.capacity()), format_size(free_bytes),
      allowed, format_size(allocated_bytes), who, format_size(unallocated));
  return oom_error(std::move(message), tried_bytes, allocated_bytes, reserved_bytes, free_bytes);
}

}  // namespace pinbench::alloc::detail
