// The allocators' bounded trace ring.
#include "alloc/history.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace pinbench::alloc::detail {

namespace {

const char* action_name(trace_action a) noexcept {
  switch (a) {
    case trace_action::alloc:
      return "alloc";
    case trace_action::free_requested:
      return "free_requested";
    case trace_action::free_completed:
      return "free_completed";
    case trace_action::segment_alloc:
      return "segment_alloc";
    case trace_action::segment_free:
      return "segment_free";
    case trace_action::segment_map:
      return "segment_map";
    case trace_action::segment_unmap:
      return "segment_unmap";
    case trace_action::oom:
      return "oom";
    case trace_action::empty_cache:
      return "empty_cache";
  }
  return "unknown";
}

}  // namespace

void history::set(bool enabled, std::size_t max_entries) {
  enabled_ = enabled;
  max_entries_ = std::max<std::size_t>(1, max_entries);
  if (!enabled_) {
    ring_.clear();
    next_ = 0;
    return;
  }
  // Switching it on again keeps what was recorded (as PyTorch), the newest within the new bound.
  std::vector<entry> ordered(ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  ordered.insert(ordered.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  if (ordered.size() > max_entries_)
    ordered.erase(ordered.begin(), ordered.end() - static_cast<std::ptrdiff_t>(max_entries_));
  ring_ = std::move(ordered);
  next_ = 0;
  ring_.reserve(std::min<std::size_t>(max_entries_, 1 << 16));
}

void history::push(trace_action action, std::uint64_t address, std::uint64_t size,
                   stream_id stream) {
  const entry e{address, size, sequence_++, stream, action};
  if (ring_.size() < max_entries_) {
    ring_.push_back(e);
    return;
  }
  ring_[next_] = e;
  next_ = (next_ + 1) % max_entries_;
}

std::vector<trace_entry> history::entries() const {
  std::vector<trace_entry> out;
  out.reserve(ring_.size());
  auto emit = [&out](const entry& e) {
    out.push_back({action_name(e.action), e.address, e.size, e.stream, e.sequence});
  };
  // While the ring is not full next_ stays 0, so this is also right for a partial ring.
  for (std::size_t i = next_; i < ring_.size(); ++i) emit(ring_[i]);
  for (std::size_t i = 0; i < next_; ++i) emit(ring_[i]);
  return out;
}

}  // namespace pinbench::alloc::detail
