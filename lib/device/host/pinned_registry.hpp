// The host backend's table of pinned host ranges: a copy whose host side lies inside one of
// them follows pinned semantics (it is only enqueued and the caller is not held).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace pinbench::device::host {

/// Registered ranges keyed by start address. Thread-safe.
class pinned_registry {
 public:
  struct range {
    std::size_t bytes = 0;
    bool locked = false;  ///< mlock succeeded (false: pinned semantics without the lock)
  };

  /// Adds [ptr, ptr + bytes); false (and nothing added) when it overlaps a registered range.
  [[nodiscard]] bool add(const void* ptr, std::size_t bytes, bool locked);
  void set_locked(const void* ptr, bool locked);
  /// Removes the range that starts at `ptr`; nullopt when there is none.
  std::optional<range> remove(const void* ptr);
  /// Forgets every range inside [ptr, ptr + bytes): that memory is about to be unmapped.
  void erase_within(const void* ptr, std::size_t bytes);
  /// True when the whole of [ptr, ptr + bytes) lies inside a single registered range.
  [[nodiscard]] bool contains(const void* ptr, std::size_t bytes) const;
  [[nodiscard]] std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, range> ranges_;
};

}  // namespace pinbench::device::host
