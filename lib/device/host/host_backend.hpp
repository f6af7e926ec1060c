// The host backend: device memory is host memory under a capacity, streams are engine threads.
#pragma once

#include <memory>

#include "device/backend.hpp"

namespace pinbench::device {

/// Makes the host backend. Lifetime: like a CUDA context, the backend must outlive the streams,
/// events, gates and buffers it hands out. Destroying it first is tolerated (it drains every
/// stream, and those objects stay safe to destroy) but nothing else may be done with them.
/// Streams are engine threads: destroying a stream (or the backend) drains its queue first, so
/// release gates before destroying their stream or the backend.
[[nodiscard]] std::unique_ptr<backend> make_host_backend(const backend_options& options);

}  // namespace pinbench::device
