#include "device/host/pinned_registry.hpp"

#include <iterator>

namespace pinbench::device::host {

namespace {
std::uintptr_t address(const void* ptr) noexcept {
  return reinterpret_cast<std::uintptr_t>(ptr);
}
}  // namespace

bool pinned_registry::add(const void* ptr, std::size_t bytes, bool locked) {
  const std::uintptr_t begin = address(ptr);
  const std::uintptr_t end = begin + bytes;
  std::lock_guard lock(mutex_);
  auto next = ranges_.lower_bound(begin);
  if (next != ranges_.end() && next->first < end) return false;
  if (next != ranges_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second.bytes > begin) return false;
  }
  ranges_.emplace_hint(next, begin, range{bytes, locked});
  return true;
}

void pinned_registry::set_locked(const void* ptr, bool locked) {
  std::lock_guard lock(mutex_);
  if (const auto it = ranges_.find(address(ptr)); it != ranges_.end()) it->second.locked = locked;
}

std::optional<pinned_registry::range> pinned_registry::remove(const void* ptr) {
  std::lock_guard lock(mutex_);
  const auto it = ranges_.find(address(ptr));
  if (it == ranges_.end()) return std::nullopt;
  const range r = it->second;
  ranges_.erase(it);
  return r;
}

void pinned_registry::erase_within(const void* ptr, std::size_t bytes) {
  const std::uintptr_t begin = address(ptr);
  std::lock_guard lock(mutex_);
  if (ranges_.empty()) return;
  ranges_.erase(ranges_.lower_bound(begin), ranges_.lower_bound(begin + bytes));
}

bool pinned_registry::contains(const void* ptr, std::size_t bytes) const {
  const std::uintptr_t begin = address(ptr);
  std::lock_guard lock(mutex_);
  auto it = ranges_.upper_bound(begin);  // the first range starting after ptr
  if (it == ranges_.begin()) return false;
  --it;
  return begin + bytes <= it->first + it->second.bytes;
}

std::size_t pinned_registry::size() const {
  std::lock_guard lock(mutex_);
  return ranges_.size();
}

}  // namespace pinbench::device::host
