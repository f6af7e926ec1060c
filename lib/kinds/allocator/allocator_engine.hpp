// Kind `allocator`: a device allocator (caching, raw) driven by a workload of allocations:
// latencies, PyTorch's memory_stats counters, fragmentation, out-of-memory errors, snapshots,
// and for the report a timeline of allocated vs reserved bytes and the segment map at peak.
#pragma once

#include <memory>

#include "alloc/allocator.hpp"
#include "measure/engine.hpp"
#include "result/result.hpp"

namespace pinbench::kinds::allocator {

/// The engine of the kind, for its description (kinds/allocator/allocator_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

/// The allocator's policy counters as deterministic metrics of one sample, under PyTorch's
/// memory_stats() names, and `fragmentation` (1 - peak allocated / peak reserved): what the
/// engine records from a run, and what `tune allocator` records from its screening replays.
void add_policy_metrics(result::case_result& r, const alloc::memory_stats& s);

}  // namespace pinbench::kinds::allocator
