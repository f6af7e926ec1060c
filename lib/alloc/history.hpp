// The allocators' trace of events for snapshots: a bounded ring (oldest dropped), recorded only
// while history is on, with a sequence number instead of a clock so that runs compare exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "alloc/allocator.hpp"

namespace pinbench::alloc::detail {

enum class trace_action : std::uint8_t {
  alloc,
  free_requested,
  free_completed,
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  empty_cache
};

class history {
 public:
  /// Starts recording (entries already there are kept, the newest max_entries of them) or
  /// stops; stopping discards the entries, as PyTorch's recordHistory(false) does.
  void set(bool enabled, std::size_t max_entries);

  void record(trace_action action, std::uint64_t address, std::uint64_t size, stream_id stream) {
    if (enabled_) push(action, address, size, stream);
  }

  /// Oldest first.
  [[nodiscard]] std::vector<trace_entry> entries() const;

 private:
  struct entry {
    std::uint64_t address, size, sequence;
    stream_id stream;
    trace_action action;
  };
  void push(trace_action action, std::uint64_t address, std::uint64_t size, stream_id stream);

  bool enabled_ = false;
  std::size_t max_entries_ = 1;
  std::vector<entry> ring_;
  std::size_t next_ = 0;  ///< slot to overwrite once the ring is full
  std::uint64_t sequence_ = 0;
};

}  // namespace pinbench::alloc::detail
