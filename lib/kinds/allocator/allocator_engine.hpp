// Kind `allocator`: a device allocator (caching, raw) driven by a workload of allocations:
// latencies, PyTorch's memory_stats counters, fragmentation, out-of-memory errors, snapshots,
// and for the report a timeline of allocated vs reserved bytes and the segment map at peak.
#pragma once

#include <memory>

#include "measure/engine.hpp"

namespace pinbench::kinds::allocator {

/// The engine of the kind, for its description (kinds/allocator/allocator_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

}  // namespace pinbench::kinds::allocator
