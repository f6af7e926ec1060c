// The host backend: device memory is host memory under a capacity, streams are engine threads.
#pragma once

#include <memory>

#include "device/backend.hpp"

namespace pinbench::device {

[[nodiscard]] std::unique_ptr<backend> make_host_backend(const backend_options& options);

}  // namespace pinbench::device
