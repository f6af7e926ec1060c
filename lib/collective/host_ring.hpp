// The host ring: N participants in this process, one persistent thread each, running ring
// collectives over host memory (the host backend's device memory is host memory).
#pragma once

#include <memory>

#include "collective/collective.hpp"

namespace pinbench::collective {

/// A ring of `participants` threads (1 or more). make_local_group builds one over host-backend
/// devices; the tests build one directly over plain host buffers.
[[nodiscard]] std::unique_ptr<group> make_host_ring(int participants);

}  // namespace pinbench::collective
