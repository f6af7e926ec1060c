// The CUDA backend (compiled only with PINBENCH_HAVE_CUDA).
#pragma once

#include <memory>

#include "device/backend.hpp"

namespace pinbench::device {

/// Throws environment_error when no device is usable.
[[nodiscard]] std::unique_ptr<backend> make_cuda_backend(const backend_options& options);

/// Probes the driver and device count without creating a context.
[[nodiscard]] availability probe_cuda();

}  // namespace pinbench::device
