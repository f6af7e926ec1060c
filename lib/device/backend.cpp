#include "device/backend.hpp"

#include <array>

#include "core/error.hpp"
#ifdef PINBENCH_HAVE_CUDA
#include "device/cuda/cuda_backend.hpp"
#endif

namespace pinbench::device {

std::string_view to_string(host_kind k) noexcept {
  switch (k) {
    case host_kind::pageable:
      return "pageable";
    case host_kind::pinned:
      return "pinned";
    case host_kind::pinned_wc:
      return "pinned_wc";
    case host_kind::registered:
      return "registered";
  }
  return "?";
}

std::string gate_timeout_warning() {
  return "a gate was not released within " + std::to_string(gate_timeout_ns / 1'000'000'000) +
         " s and let its stream go on: timings taken behind it are not valid";
}

namespace {

// Every backend's name, the one place they are written: results, messages and `--backend`
// all read them from here.
struct named_backend {
  platform_kind kind;
  std::string_view name;
};
constexpr std::array<named_backend, 2> backend_names{
    {{platform_kind::host, "host"}, {platform_kind::cuda, "cuda"}}};

}  // namespace

std::string_view to_string(platform_kind k) noexcept {
  for (const auto& b : backend_names)
    if (b.kind == k) return b.name;
  return "?";
}

std::optional<platform_kind> parse_platform_kind(std::string_view name) noexcept {
  for (const auto& b : backend_names)
    if (b.name == name) return b.kind;
  return std::nullopt;
}

namespace {

[[noreturn]] void unsupported(const backend& dev, std::string_view what) {
  throw device_error(std::string(what) + " is not supported by the " + std::string(dev.name()) +
                     " backend");
}

}  // namespace

std::size_t backend::physical_granularity() const {
  unsupported(*this, "virtual memory");
}
void* backend::reserve_virtual(std::size_t) {
  unsupported(*this, "virtual memory");
}
void backend::release_virtual(void*, std::size_t) {
  unsupported(*this, "virtual memory");
}
bool backend::map_physical(void*, std::size_t) {
  unsupported(*this, "virtual memory");
}
void backend::unmap_physical(void*, std::size_t) {
  unsupported(*this, "virtual memory");
}
void* backend::malloc_async(std::size_t, stream&) {
  unsupported(*this, "stream-ordered allocation (cudaMallocAsync)");
}
void backend::free_async(void*, stream&) {
  unsupported(*this, "stream-ordered allocation (cudaMallocAsync)");
}
async_pool_usage backend::async_pool() const {
  unsupported(*this, "stream-ordered allocation (cudaMallocAsync)");
}
void backend::reset_async_pool_peaks() {
  unsupported(*this, "stream-ordered allocation (cudaMallocAsync)");
}
void backend::trim_async_pool(std::size_t) {
  unsupported(*this, "stream-ordered allocation (cudaMallocAsync)");
}

availability cuda_availability() {
#ifdef PINBENCH_HAVE_CUDA
  return probe_cuda();
#else
  return {false, "pinbench was built without CUDA (PINBENCH_CUDA=OFF or no nvcc)"};
#endif
}

}  // namespace pinbench::device
