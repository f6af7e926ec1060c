#include "device/backend.hpp"

#include "core/error.hpp"
#include "device/host/host_backend.hpp"
#ifdef PINBENCH_HAVE_CUDA
#include "device/cuda/cuda_backend.hpp"
#endif

namespace pinbench::device {

std::string_view to_string(host_kind k) noexcept {
  switch (k) {
    case host_kind::pageable: return "pageable";
    case host_kind::pinned: return "pinned";
    case host_kind::pinned_wc: return "pinned_wc";
    case host_kind::registered: return "registered";
  }
  return "?";
}

std::string gate_timeout_warning() {
  return "a gate was not released within " + std::to_string(gate_timeout_ns / 1'000'000'000) +
         " s and let its stream go on: timings taken behind it are not valid";
}

std::string_view to_string(platform_kind k) noexcept {
  switch (k) {
    case platform_kind::host: return "host";
    case platform_kind::cuda: return "cuda";
  }
  return "?";
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

std::unique_ptr<backend> make_backend(std::string_view which, const backend_options& options) {
  if (which == "host") return make_host_backend(options);
  if (which == "cuda" || which == "auto") {
    const auto a = cuda_availability();
    if (!a.usable) {
      if (which == "auto") return make_host_backend(options);
      throw environment_error("--backend cuda: no usable CUDA device: " + a.reason);
    }
#ifdef PINBENCH_HAVE_CUDA
    return make_cuda_backend(options);
#endif
  }
  throw input_error({}, "--backend", "unknown backend \"" + std::string(which) +
                                         "\", expected \"auto\", \"cuda\" or \"host\"");
}

}  // namespace pinbench::device
