// A stock of reusable events: creating one per copy would cost a driver call each time.
#pragma once

#include <memory>
#include <vector>

#include "device/backend.hpp"

namespace pinbench::device {

/// Hands out events from `dev`, reusing those given back. Not thread-safe: its owner's lock
/// (or single thread) guards it.
class event_stock {
 public:
  explicit event_stock(backend& dev) : dev_(dev) {}
  [[nodiscard]] std::unique_ptr<event> take() {
    if (spare_.empty()) return dev_.create_event();
    auto e = std::move(spare_.back());
    spare_.pop_back();
    return e;
  }
  /// Gives back an event whose work completed (or that was never recorded); null is ignored.
  void give(std::unique_ptr<event> e) {
    if (e) spare_.push_back(std::move(e));
  }

 private:
  backend& dev_;
  std::vector<std::unique_ptr<event>> spare_;
};

}  // namespace pinbench::device
