// What a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot's pickle) says beyond its
// trace: the allocator's settings, the request that ran out of memory, the memory reserved.
// open_trace (alloc/workload.hpp) replays its trace; the mapping is in trace_pickle.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloc/config.hpp"
#include "alloc/pytorch_version.hpp"

namespace pinbench::alloc {

/// The PyTorch releases that write a snapshot in this format (its keys), and the key that
/// tells: the allocator's rules are picked from the newest of them unless told otherwise.
struct snapshot_format {
  pytorch_release oldest, newest;
  std::string evidence;  ///< "trace entries have compile_context, the settings no ..."
  /// "2.5-2.7", "2.8", "2.10 or later"
  [[nodiscard]] std::string releases() const;
};

struct torch_snapshot_facts {
  int device = 0;  ///< whose device_traces entry
  /// The snapshot's allocator_settings in PYTORCH_CUDA_ALLOC_CONF syntax as parse_config
  /// accepts it (max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold,
  /// expandable_segments; "" for PyTorch's defaults); none when the snapshot has no
  /// allocator_settings. Keys pinbench does not model (pinned_*, release_lock_on_cudamalloc)
  /// are left out.
  std::optional<std::string> alloc_conf;
  /// The same settings as a config (what they are; alloc_conf is how the release the
  /// snapshot's format shows writes them: the same text means other tables in other releases).
  std::optional<config> settings;
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
  /// The releases whose snapshots look like this one; none when nothing tells (no entries).
  std::optional<snapshot_format> format;
  /// PyTorch's device calls in the trace (segment_alloc/free/map/unmap entries).
  std::uint64_t pytorch_decisions = 0;
  /// The memory the recording began with: segments (or mapped ranges) and live blocks.
  std::uint64_t start_segments = 0, start_live_blocks = 0;
  /// Remarks: frees dropped (blocks allocated before the history began), allocations still live
  /// at the end, the oom replayed as an allocation, the PYTORCH_CUDA_ALLOC_CONF text recorded.
  std::vector<std::string> notes;
};

/// The release whose rules decide a replay, and why: as asked (`asked_by` names who asked),
/// else the newest a snapshot's format allows (`facts` may be null), else the newest modelled.
struct chosen_release {
  pytorch_release release;
  std::string why;
};
[[nodiscard]] chosen_release choose_release(std::optional<pytorch_release> asked,
                                            const std::string& asked_by,
                                            const torch_snapshot_facts* facts);

/// True when `path` starts as a pickle does (PROTO): a PyTorch snapshot rather than a
/// pinbench.trace/1 JSON or an RMM log.
[[nodiscard]] bool is_torch_snapshot(const std::string& path);

/// Reads the snapshot pickle at `path` and its trace for `device`. Throws input_error as
/// open_trace(path, {device}) does (a file that is not a snapshot, no such device, ...).
[[nodiscard]] torch_snapshot_facts read_torch_snapshot_facts(const std::string& path,
                                                             int device = 0);

/// The facts of every device the snapshot has a trace for, the pickle read once.
[[nodiscard]] std::vector<torch_snapshot_facts> read_torch_snapshot_devices(
    const std::string& path);

}  // namespace pinbench::alloc
