// A memory snapshot as JSON in the structure of torch.cuda.memory._snapshot(), so that tools
// written for PyTorch's snapshots (segments with blocks, device traces) can read it.
#pragma once

#include <nlohmann/json.hpp>

#include "alloc/allocator.hpp"

namespace pinbench::kinds::allocator {

/// {"segments": [{"device", "address", "total_size", "stream", "segment_type",
///   "allocated_size", "active_size", "requested_size", "is_expandable",
///   "blocks": [{"address", "size", "requested_size", "state"}]}],
///  "device_traces": [[{"action", "addr", "size", "stream", "seq"}]]}
/// One device (0): device_traces holds one list, empty when history was not recorded.
[[nodiscard]] nlohmann::json snapshot_json(const alloc::snapshot& s);

}  // namespace pinbench::kinds::allocator
