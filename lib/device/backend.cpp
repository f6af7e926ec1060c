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
