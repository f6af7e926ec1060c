#include "device/host/staging_ring.hpp"

namespace pinbench::device::host {

staging_ring::staging_ring() : memory_(chunk_bytes * slot_count) {
  memory_.keep_from_children();
}

staging_ring::~staging_ring() {
  std::unique_lock lock(state_mutex_);
  returned_cv_.wait(lock, [&] {
    for (const bool busy : in_flight_)
      if (busy) return false;
    return true;
  });
}

std::byte* staging_ring::claim(std::size_t i) {
  std::unique_lock lock(state_mutex_);
  returned_cv_.wait(lock, [&] { return !in_flight_[i]; });
  in_flight_[i] = true;
  return chunk(i);
}

void staging_ring::await(std::size_t i) {
  std::unique_lock lock(state_mutex_);
  returned_cv_.wait(lock, [&] { return !in_flight_[i]; });
}

void staging_ring::hand_back(std::size_t i) noexcept {
  {
    std::lock_guard lock(state_mutex_);
    in_flight_[i] = false;
  }
  returned_cv_.notify_all();
}

}  // namespace pinbench::device::host
