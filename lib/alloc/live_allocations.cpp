// The raw and async allocators' table of live requests, and the snapshot it gives.
#include "alloc/live_allocations.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace pinbench::alloc::detail {

namespace {

segment_info one_block_segment(std::uintptr_t address, const live_allocation& a) {
  segment_info seg;
  seg.address = address;
  seg.total_size = seg.allocated_size = seg.active_size = a.size;
  seg.requested_size = a.requested_size;
  seg.stream = a.stream;
  seg.segment_type = a.small() ? "small" : "large";
  seg.blocks.push_back({address, a.size, a.requested_size, "active_allocated"});
  return seg;
}

}  // namespace

live_allocations::const_iterator live_allocations::find_live(const void* ptr) const {
  const auto it = table_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == table_.end()) throw device_error(fmt::format("invalid device pointer: {}", ptr));
  return it;
}

snapshot live_allocations::take_snapshot(const history* events) const {
  snapshot out;
  out.segments.reserve(table_.size());
  for (const auto& [address, a] : table_) out.segments.push_back(one_block_segment(address, a));
  std::sort(out.segments.begin(), out.segments.end(),
            [](const segment_info& x, const segment_info& y) { return x.address < y.address; });
  if (events != nullptr) out.trace = events->entries();
  return out;
}

}  // namespace pinbench::alloc::detail
