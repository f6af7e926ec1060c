// Kind `allocator`: a device allocator (caching, raw) driven by a workload of allocations:
// latencies, PyTorch's memory_stats counters, fragmentation, out-of-memory errors, snapshots,
// and for the report a timeline of allocated vs reserved bytes and the segment map at peak.
#pragma once

#include <memory>

#include "bench/engine.hpp"

namespace pinbench::bench {

[[nodiscard]] std::unique_ptr<engine> make_allocator_engine();

}  // namespace pinbench::bench
