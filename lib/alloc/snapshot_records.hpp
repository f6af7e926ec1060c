// A PyTorch snapshot's device, as plain records (internal to alloc/): what trace_pickle.cpp reads
// out of the pickle, and what snapshot_replay.cpp makes of it: the events to replay, the start
// state and PyTorch's decisions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/config.hpp"
#include "alloc/recording.hpp"
#include "alloc/workload.hpp"

namespace pinbench::alloc::detail {

enum class entry_kind : std::uint8_t {
  alloc,
  free_requested,
  free_completed,  ///< "free" of early releases too
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  other  ///< "snapshot", "user_defined", ...: nothing to replay
};

/// One entry of device_traces[device].
struct trace_record {
  entry_kind kind = entry_kind::other;
  std::uint64_t address = 0, size = 0;
  std::int64_t stream = 0;                   ///< the cudaStream_t as recorded
  std::optional<std::uint64_t> device_free;  ///< oom: the device's free bytes then
  /// segment_free/segment_unmap: true when its stack shows empty_cache() (emptyCache), false
  /// when it shows the allocator's malloc; none without a stack.
  std::optional<bool> by_empty_cache{};
};

/// A block of a segment of `segments`, at the dump.
struct block_record {
  std::uint64_t address = 0, size = 0, requested_size = 0;
  bool live = false;  ///< active_allocated or active_pending_free
};

/// A segment of `segments` (for expandable segments: a mapped range), at the dump.
struct segment_record {
  std::uint64_t address = 0, size = 0;
  std::int64_t stream = 0;
  std::optional<bool> small;  ///< from segment_type, when given
  bool expandable = false;
  std::vector<block_record> blocks;  ///< in address order
};

struct device_records {
  std::string source;  ///< the file, for errors
  int device = 0;
  std::vector<trace_record> trace;
  std::vector<segment_record> segments;  ///< this device's, in address order
  /// The settings the program ran with (allocator_settings, else PyTorch's defaults).
  config settings;
};

/// What a replay of one device is made of.
struct snapshot_replay_plan {
  std::vector<event> events;
  std::shared_ptr<recording> recorded;
  std::vector<std::string> notes;        ///< what was dropped, kept live, reconstructed
  std::optional<std::size_t> oom_entry;  ///< the last oom entry
  std::uint64_t oom_event_index = 0;     ///< its allocation among `events`
};

/// The events, start state and decisions of a device's records. `at` names the trace in
/// notes ("device_traces[0]").
[[nodiscard]] snapshot_replay_plan plan_snapshot_replay(const device_records& records,
                                                        const std::string& at);

}  // namespace pinbench::alloc::detail
