// Following PyTorch's recorded decisions (alloc/follow.hpp).
#include "alloc/follow.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::alloc {

// Named rather than anonymous: a unity build puts this file beside the other allocators'.
namespace following {

constexpr std::uint64_t kAlignment = 512;  // cudaMalloc's observable grain
// Fresh addresses start this far above everything PyTorch's recording shows: they never meet
// one of PyTorch's, and, being higher, sort after them as a later cudaMalloc's often do.
constexpr std::uint64_t kFreshGap = std::uint64_t{1} << 40;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) {
  return (n + to - 1) / to * to;
}

void* as_pointer(std::uint64_t a) noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(a));
}
std::uint64_t as_address(const void* p) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

bool is_release(decision_kind k) noexcept {
  return k == decision_kind::segment_free || k == decision_kind::segment_unmap;
}

}  // namespace following

decision_follower::decision_follower(const recording& rec, std::uint64_t capacity, bool follow)
    : rec_(rec),
      capacity_(static_cast<std::size_t>(capacity)),
      follow_(follow),
      start_reservations_(rec.start.reservations()),
      in_step_(follow) {
  if (capacity == 0) throw input_error("the emulated device capacity must be above 0 bytes");
  std::uint64_t highest = 0;
  for (const auto& s : rec.start.segments) highest = std::max(highest, s.address + s.size);
  for (const auto& d : rec.decisions)
    if (d.decision.kind != decision_kind::oom)
      highest = std::max(highest, d.decision.address + d.decision.size);
  for (const auto base : rec.reservation_bases) highest = std::max(highest, base);
  next_fresh_ = following::round_up(highest, granularity()) + following::kFreshGap;
  // PyTorch's reserved memory over its recording, for the check to compare with the device.
  std::uint64_t reserved = rec.start.reserved_bytes();
  pytorch_peak_reserved_ = reserved;
  for (const auto& d : rec.decisions) {
    const auto k = d.decision.kind;
    if (k == decision_kind::segment_alloc || k == decision_kind::segment_map) {
      reserved += d.decision.size;
    } else if (following::is_release(k)) {
      reserved -= std::min(reserved, d.decision.size);
    }
    pytorch_peak_reserved_ = std::max(pytorch_peak_reserved_, reserved);
  }
}

void decision_follower::at_event(std::uint64_t index) noexcept {
  adopting_ = false;
  event_ = index;
}

const recorded_decision* decision_follower::expected() const noexcept {
  if (!in_step_ || cursor_ >= rec_.decisions.size()) return nullptr;
  return &rec_.decisions[cursor_];
}

bool decision_follower::fail_as_pytorch(std::uint64_t bytes) noexcept {
  if (adopting_) return false;
  const recorded_decision* e = expected();
  // Only for the event PyTorch released (or ran out) at: a request PyTorch served without a
  // device call is a difference, not a failure.
  if (e == nullptr || e->event != event_ ||
      !(following::is_release(e->decision.kind) || e->decision.kind == decision_kind::oom))
    return false;
  ++forced_failures_;
  // PyTorch's device could not give this much more than it held: a bound on its memory.
  const std::uint64_t bound = used_ + bytes - 1;
  device_limit_ = device_limit_ ? std::min(*device_limit_, bound) : bound;
  return true;
}

std::uint64_t decision_follower::fresh(std::uint64_t bytes) {
  const std::uint64_t address = next_fresh_;
  next_fresh_ = following::round_up(next_fresh_ + bytes, granularity());
  return address;
}

bool decision_follower::range_free(std::uint64_t address, std::uint64_t bytes) const {
  auto it = segments_.upper_bound(address);
  if (it != segments_.end() && it->first < address + bytes) return false;
  if (it != segments_.begin()) {
    --it;
    if (it->first + it->second > address) return false;
  }
  return true;
}

void* decision_follower::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::uint64_t size = following::round_up(bytes, following::kAlignment);
  if (size > capacity_ - used_) return nullptr;
  std::optional<std::uint64_t> at;
  if (adopting_) {
    // The start state's whole segments, in the order allocator::adopt takes them.
    const auto& segments = rec_.start.segments;
    while (next_start_segment_ < segments.size() && segments[next_start_segment_].expandable)
      ++next_start_segment_;
    if (next_start_segment_ < segments.size() && segments[next_start_segment_].size == size)
      at = segments[next_start_segment_++].address;
  } else {
    if (fail_as_pytorch(size)) return nullptr;
    if (const recorded_decision* e = expected(); e != nullptr &&
                                                 e->decision.kind == decision_kind::segment_alloc &&
                                                 e->decision.size == size)
      at = e->decision.address;
  }
  std::uint64_t address = at && range_free(*at, size) ? *at : fresh(size);
  while (!range_free(address, size)) address = fresh(size);
  segments_.emplace(address, size);
  used_ += size;
  return following::as_pointer(address);
}

void decision_follower::deallocate(void* ptr, std::size_t /*bytes: known here*/) {
  if (ptr == nullptr) return;
  const auto it = segments_.find(following::as_address(ptr));
  if (it == segments_.end())
    throw device_error(fmt::format("emulated device: {} is not a live allocation", ptr));
  used_ -= it->second;
  segments_.erase(it);
}

void* decision_follower::reserve_address(std::size_t bytes) {
  const std::uint64_t size = following::round_up(bytes == 0 ? 1 : bytes, granularity());
  std::optional<std::uint64_t> base;
  if (adopting_) {
    if (next_start_reservation_ < start_reservations_.size())
      base = start_reservations_[next_start_reservation_++];
  } else if (in_step_ && next_reservation_ < rec_.reservation_bases.size()) {
    base = rec_.reservation_bases[next_reservation_++];
  }
  if (!base || reservations_.contains(*base)) base = fresh(size);
  reservations_.emplace(*base, size);
  return following::as_pointer(*base);
}

void decision_follower::release_address(void* base, std::size_t /*bytes: known here*/) {
  const auto it = reservations_.find(following::as_address(base));
  if (it == reservations_.end())
    throw device_error(fmt::format("emulated device: {} is not a reserved address range", base));
  // Pages still mapped go with the range: its own, not another's that its extent, sized for
  // this device rather than PyTorch's, may reach over.
  for (auto page = mapped_.lower_bound(it->first); page != mapped_.end();) {
    if (page->second.owner != it->first) {
      ++page;
      continue;
    }
    used_ -= page->second.bytes;
    page = mapped_.erase(page);
  }
  reservations_.erase(it);
}

bool decision_follower::map(void* addr, std::size_t bytes) {
  if (fail_as_pytorch(bytes)) return false;
  if (bytes > capacity_ - used_) return false;
  // A page is its reservation's: the one of the highest base at or below it.
  const std::uint64_t a = following::as_address(addr);
  auto owner = reservations_.upper_bound(a);
  if (owner == reservations_.begin())
    throw device_error(fmt::format("emulated device: {} is not inside a reserved range", addr));
  --owner;
  if (!mapped_.emplace(a, mapped_page{bytes, owner->first}).second)
    throw device_error(fmt::format("emulated device: {} is mapped already", addr));
  used_ += bytes;
  return true;
}

void decision_follower::unmap(void* addr, std::size_t /*bytes: known here*/) {
  const auto it = mapped_.find(following::as_address(addr));
  if (it == mapped_.end())
    throw device_error(fmt::format("emulated device: {} is not mapped", addr));
  used_ -= it->second.bytes;
  mapped_.erase(it);
}

void decision_follower::on_placement(std::uint64_t address, std::uint64_t size) noexcept {
  if (!in_step_ || first_placement_ || event_ >= rec_.placements.size()) return;
  const std::uint64_t theirs = rec_.placements[event_];
  if (theirs != 0 && theirs != address)
    first_placement_ =
        placement_difference{.event = event_, .size = size, .pytorch = theirs, .pinbench = address};
}

void decision_follower::diverge(std::optional<allocator_decision> ours) {
  divergence d;
  d.device = rec_.device;
  d.index = identical_;
  d.event = event_;
  if (const recorded_decision* e = expected()) {
    d.entry = e->entry;
    d.pytorch = e->decision;
  }
  d.pinbench = ours;
  first_ = d;
  in_step_ = false;
}

void decision_follower::on_decision(const allocator_decision& d) {
  if (is_device_call(d.kind)) ++replayed_;
  if (!in_step_) return;
  const recorded_decision* e = expected();
  if (e == nullptr) {
    diverge(d);
    return;
  }
  const allocator_decision& theirs = e->decision;
  // An oom entry's address holds the device's free memory, not a place: it is not compared.
  // Made for another event is another decision, whatever it looks like.
  const bool same = e->event == event_ && theirs.kind == d.kind && theirs.size == d.size &&
                    theirs.stream == d.stream &&
                    (d.kind == decision_kind::oom || theirs.address == d.address);
  if (!same) {
    diverge(d);
    return;
  }
  ++cursor_;
  if (is_device_call(d.kind)) ++identical_;
}

decision_check decision_follower::check() const {
  decision_check c;
  c.pytorch = rec_.device_calls();
  c.replayed = replayed_;
  c.identical = identical_;
  c.first = first_;
  c.first_placement = first_placement_;
  if (follow_ && !c.first && cursor_ < rec_.decisions.size()) {
    // PyTorch went on where the replay stopped: its next decision (an oom too) is the
    // difference.
    const auto rest = rec_.decisions.begin() + static_cast<std::ptrdiff_t>(cursor_);
    {
      divergence d;
      d.device = rec_.device;
      d.index = identical_;
      d.event = rest->event;
      d.entry = rest->entry;
      d.pytorch = rest->decision;
      c.first = d;
    }
  }
  c.empty_cache_calls = rec_.empty_cache_calls;
  c.forced_failures = forced_failures_;
  c.pytorch_peak_reserved = pytorch_peak_reserved_;
  c.device_bytes = capacity_;
  c.device_limit = device_limit_;
  c.start_segments = rec_.start.segments.size();
  c.start_blocks = rec_.start.live_blocks();
  return c;
}

}  // namespace pinbench::alloc
