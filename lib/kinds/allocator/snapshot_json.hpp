// A memory snapshot as JSON in the structure of torch.cuda.memory._snapshot(), so that tools
// written for PyTorch's snapshots (segments with blocks, device traces) can read it.
#pragma once

#include <nlohmann/json.hpp>

#include "alloc/allocator.hpp"
#include "alloc/config.hpp"

namespace pinbench::kinds::allocator {

/// {"segments": [{"device", "address", "total_size", "stream", "segment_type",
///   "allocated_size", "active_size", "requested_size", "is_expandable",
///   "blocks": [{"address", "size", "requested_size", "state"}]}],
///  "device_traces": [[{"action", "addr", "size", "stream", "seq"}]]}
/// One device (0): device_traces holds one list, empty when history was not recorded.
[[nodiscard]] nlohmann::json snapshot_json(const alloc::snapshot& s);

/// The same with "allocator_settings" as PyTorch 2.3+ writes them (PYTORCH_CUDA_ALLOC_CONF,
/// max_split_size in bytes or -1, garbage_collection_threshold, expandable_segments,
/// roundup_power2_divisions per interval "1" .. "32768" MiB), so that the snapshot read back
/// replays under the settings it was made with, and the keys conf.release's snapshots add
/// (external_annotations from 2.5, compile_context from 2.8, ...): its format tells the release.
[[nodiscard]] nlohmann::json snapshot_json(const alloc::snapshot& s, const alloc::config& conf);

/// A snapshot_json document in the form PyTorch pickles it, for its memory viewer: every
/// segment, block and trace entry with "frames" (empty: pinbench has no Python stacks; a
/// segment_free or segment_unmap has one frame, empty_cache or the allocator's malloc, which
/// made it, as PyTorch's recorded stacks say), trace entries with "time_us" (the sequence
/// number: pinbench's order is a counter, not a clock), segments with "segment_pool_id", and
/// pinbench's own "empty_cache" entries left out (PyTorch records only the
/// segment_free/segment_unmap an empty_cache() makes).
[[nodiscard]] nlohmann::json torch_pickle_form(const nlohmann::json& snapshot);

}  // namespace pinbench::kinds::allocator
