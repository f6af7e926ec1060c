// What every allocator strategy shares (alloc/allocator.hpp).
#include "alloc/allocator.hpp"

namespace pinbench::alloc {

// An allocator that caches nothing has nothing of a recording's cached memory to keep: only
// the blocks that were live, allocated as the program asked for them.
std::vector<void*> device_allocator::adopt(const start_state& start) {
  std::vector<void*> out;
  out.reserve(start.live_blocks());
  for (const auto& seg : start.segments)
    for (const auto& b : seg.live)
      out.push_back(allocate(b.requested_size != 0 ? b.requested_size : b.size, seg.stream));
  return out;
}

}  // namespace pinbench::alloc
