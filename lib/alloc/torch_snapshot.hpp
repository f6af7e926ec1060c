// What a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot's pickle) says beyond its
// trace: the allocator's settings, the request that ran out of memory, the memory reserved.
// open_trace (alloc/workload.hpp) replays its trace; the mapping is in trace_pickle.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pinbench::alloc {

struct torch_snapshot_facts {
  /// The snapshot's allocator_settings in PYTORCH_CUDA_ALLOC_CONF syntax as parse_config
  /// accepts it (max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold,
  /// expandable_segments; "" for PyTorch's defaults); none when the snapshot has no
  /// allocator_settings. Keys pinbench does not model (pinned_*, release_lock_on_cudamalloc)
  /// are left out.
  std::optional<std::string> alloc_conf;
  /// The last oom entry of the device's trace: the request that failed, and the bytes the
  /// device had free then (cudaMemGetInfo).
  std::optional<std::uint64_t> oom_size, oom_device_free;
  /// Index, in the events open_trace gives, of that oom's allocation (0 without an oom).
  std::uint64_t oom_event_index = 0;
  /// Events open_trace gives for this device.
  std::uint64_t events = 0;
  /// Sum of total_size over the snapshot's segments of this device.
  std::uint64_t reserved_at_snapshot = 0;
  /// Reserved at the oom: reserved_at_snapshot with the segment_alloc/free/map/unmap entries
  /// after the oom undone; none without an oom or when those entries do not add up.
  std::optional<std::uint64_t> reserved_at_oom;
  /// reserved_at_oom + oom_device_free: what the allocator could have had when it failed, a
  /// lower bound of the device's memory (the CUDA context and other processes are not in it);
  /// 0 when not derivable (no oom).
  std::uint64_t device_total = 0;
  /// Remarks: frees dropped (blocks allocated before the history began), allocations still live
  /// at the end, the oom replayed as an allocation, the PYTORCH_CUDA_ALLOC_CONF text recorded.
  std::vector<std::string> notes;
};

/// Reads the snapshot pickle at `path` and its trace for `device`. Throws input_error as
/// open_trace(path, {device}) does (a file that is not a snapshot, no such device, ...).
[[nodiscard]] torch_snapshot_facts read_torch_snapshot_facts(const std::string& path,
                                                             int device = 0);

}  // namespace pinbench::alloc
