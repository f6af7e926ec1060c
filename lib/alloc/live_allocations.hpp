// The live requests of the allocators that make one device allocation per request (raw
// cudaMalloc, cudaMallocAsync). Each request is shown as a segment holding one block, so both
// keep the same table and take their snapshots from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "alloc/allocator.hpp"
#include "alloc/history.hpp"

namespace pinbench::alloc::detail {

struct live_allocation {
  std::size_t size;            ///< what the device holds (raw rounds up, async does not)
  std::size_t requested_size;  ///< what was asked for
  stream_id stream;

  /// The pool that PyTorch's statistics count it in.
  [[nodiscard]] bool small() const noexcept { return size <= small_request_limit; }
};

class live_allocations {
  using table = std::unordered_map<std::uintptr_t, live_allocation>;

 public:
  using const_iterator = table::const_iterator;

  void add(const void* ptr, const live_allocation& a) {
    table_.emplace(reinterpret_cast<std::uintptr_t>(ptr), a);
  }
  /// The entry of a live pointer; throws device_error for any other. Found and erased apart,
  /// so that an allocator can give the memory back before it forgets the entry.
  [[nodiscard]] const_iterator find_live(const void* ptr) const;
  void erase(const_iterator it) { table_.erase(it); }
  void clear() noexcept { table_.clear(); }

  [[nodiscard]] const_iterator begin() const noexcept { return table_.begin(); }
  [[nodiscard]] const_iterator end() const noexcept { return table_.end(); }

  /// torch.cuda.memory._snapshot() of these allocations (one segment each, in address order)
  /// with the trace that `events` holds (none: the segments alone).
  [[nodiscard]] snapshot take_snapshot(const history* events) const;

 private:
  table table_;
};

}  // namespace pinbench::alloc::detail
