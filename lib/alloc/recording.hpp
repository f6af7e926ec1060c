// What a PyTorch memory snapshot recorded beside its requests, as a replay uses it: the memory
// that existed when the recording began (its start state) and PyTorch's own decisions
// (segment_alloc, segment_free, segment_map, segment_unmap), each placed at the replay event
// it belongs to. trace_pickle.cpp makes it from a snapshot; alloc/follow.hpp replays along it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pinbench::alloc {

using stream_id = std::uint32_t;

/// A decision of the caching allocator that a snapshot's trace records: a segment obtained or
/// given back (cudaMalloc / cudaFree), a range of an expandable segment mapped or unmapped,
/// or an allocation that ran out of memory (not a device call: it keeps the replay in step).
enum class decision_kind : std::uint8_t {
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom
};

/// The trace entry's action name ("segment_alloc", ... "oom").
[[nodiscard]] std::string_view to_string(decision_kind k) noexcept;

/// True for the four device calls; false for oom.
[[nodiscard]] constexpr bool is_device_call(decision_kind k) noexcept {
  return k != decision_kind::oom;
}

struct allocator_decision {
  decision_kind kind = decision_kind::segment_alloc;
  std::uint64_t address = 0;  ///< the segment's or range's start (oom: 0)
  std::uint64_t size = 0;     ///< bytes (oom: the request that failed, rounded)
  stream_id stream = 0;
  [[nodiscard]] bool operator==(const allocator_decision&) const = default;
};

/// One of PyTorch's decisions, where it sits in the snapshot and in the replay.
struct recorded_decision {
  allocator_decision decision;
  std::uint64_t entry = 0;  ///< index in device_traces[device]
  std::uint64_t event = 0;  ///< index of the replay event it was made for
};

/// The ids of the blocks of a start state begin here (a trace's own allocations count from 1).
inline constexpr std::uint64_t start_block_ids = std::uint64_t{1} << 62;

/// A block live when the recording began.
struct start_block {
  std::uint64_t address = 0, size = 0, requested_size = 0;
  /// The id the events free it with; 0 when the trace never frees it.
  std::uint64_t id = 0;
};

/// A segment that existed when the recording began, or, for expandable segments, a mapped
/// range of one; its live blocks in address order (the rest of it was cached, free).
struct start_segment {
  std::uint64_t address = 0, size = 0;
  stream_id stream = 0;
  bool small = false;  ///< the small pool (2 MiB segments)
  bool expandable = false;
  /// Expandable: the start of the address range reserved for it (the lowest address the
  /// snapshot shows for its stream and pool).
  std::uint64_t reservation = 0;
  std::vector<start_block> live{};
};

/// The memory that existed when the recording began: where a replay starts.
struct start_state {
  std::vector<start_segment> segments;  ///< in address order
  [[nodiscard]] bool empty() const noexcept { return segments.empty(); }
  [[nodiscard]] std::uint64_t reserved_bytes() const noexcept;
  [[nodiscard]] std::uint64_t live_bytes() const noexcept;
  [[nodiscard]] std::size_t live_blocks() const noexcept;
  /// The expandable reservations the ranges lie in, in the order of `segments`: the order in
  /// which the allocator adopting them reserves their address ranges.
  [[nodiscard]] std::vector<std::uint64_t> reservations() const;
};

/// How PyTorch released memory the replay's own rules would not release: by an empty_cache()
/// call of the program (a run of segment_free/segment_unmap between two requests), or in the
/// retry path of an allocation whose cudaMalloc failed (a run right before the allocation's
/// segment_alloc/segment_map, or before its oom).
enum class release_cause : std::uint8_t { empty_cache, retry };

/// Everything of one device's recording that the replay follows.
struct recording {
  int device = 0;  ///< the snapshot's device_traces entry
  start_state start;
  std::vector<recorded_decision> decisions;  ///< in trace order, oom entries included
  /// Expandable segments reserved after the recording began: their bases, in the order the
  /// trace first maps into them (the replay reserves them in the same order).
  std::vector<std::uint64_t> reservation_bases;
  /// Per event: the trace entry it comes from (device_traces[device][entry]).
  std::vector<std::uint64_t> entries;
  /// "events[12] (device_traces[0][40])": where an event is, in the replay and in the snapshot.
  [[nodiscard]] std::string where(std::uint64_t event) const;
  /// Per event: the address PyTorch's block got, for an allocation (0 for other events, and
  /// for an oom's allocation, which PyTorch never made).
  std::vector<std::uint64_t> placements;
  /// empty_cache events the reader placed in the events (one per release run of that cause).
  std::uint64_t empty_cache_calls = 0;
  /// Release runs PyTorch made in its retry path.
  std::uint64_t retry_releases = 0;
  /// PyTorch's device calls (decisions other than oom).
  [[nodiscard]] std::uint64_t device_calls() const noexcept;
};

/// "events[12] (device_traces[0][40])": a replay event and, when known, the snapshot's trace
/// entry it comes from; "events[12]" without one.
[[nodiscard]] std::string event_location(std::uint64_t event, int device,
                                         std::optional<std::uint64_t> entry);

/// Where a replay first did something else than PyTorch.
struct divergence {
  int device = 0;                      ///< whose device_traces entry
  std::uint64_t index = 0;             ///< among PyTorch's device calls (0-based)
  std::uint64_t event = 0;             ///< the replay event in hand
  std::optional<std::uint64_t> entry;  ///< PyTorch's trace entry, when PyTorch made one
  std::optional<allocator_decision> pytorch, pinbench;  ///< none: that side made no call
  /// One line: "events[12] (device_traces[0][40]): PyTorch segment_alloc 20 MiB on stream 0,
  /// pinbench segment_alloc 2 MiB on stream 0".
  [[nodiscard]] std::string describe() const;
};

/// Where the replay first put a block elsewhere than PyTorch did, while its device calls were
/// still PyTorch's: the place to look when they part later.
struct placement_difference {
  std::uint64_t event = 0;
  std::uint64_t size = 0;
  std::uint64_t pytorch = 0, pinbench = 0;  ///< the block's address
};

/// A replay checked against PyTorch's decisions.
struct decision_check {
  std::uint64_t pytorch = 0;    ///< PyTorch's device calls
  std::uint64_t replayed = 0;   ///< the replay's
  std::uint64_t identical = 0;  ///< leading calls equal in kind, address, size and stream
  std::optional<divergence> first;
  std::optional<placement_difference> first_placement;
  std::uint64_t empty_cache_calls = 0;  ///< releases taken from the trace as empty_cache()
  std::uint64_t forced_failures = 0;    ///< cudaMalloc failed as PyTorch's did, for its retry
  std::uint64_t start_segments = 0, start_blocks = 0;
  /// The most PyTorch had reserved (the start state, then its decisions), and the replay's
  /// device: a device smaller than that cannot follow PyTorch past it.
  std::uint64_t pytorch_peak_reserved = 0, device_bytes = 0;
  /// What PyTorch's failed cudaMalloc calls show of its device: the least, over them, of the
  /// memory reserved then plus the size asked for, less one byte. None without a failure.
  std::optional<std::uint64_t> device_limit;
  [[nodiscard]] bool reproduced() const noexcept { return !first && identical == pytorch; }
  /// "PyTorch's 461 cudaMalloc/cudaFree decisions reproduced exactly", or the count and the
  /// first divergence.
  [[nodiscard]] std::string summary() const;
};

}  // namespace pinbench::alloc
