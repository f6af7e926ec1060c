// The host backend's staging ring: a few page-locked chunks through which pageable copies are
// bounced, as the CUDA driver does, so that a pageable transfer pays the extra host copy and
// holds the calling thread.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "device/host/host_memory.hpp"

namespace pinbench::device::host {

/// `slot_count` chunks of `chunk_bytes`. The thread that stages a copy claims a slot, fills or
/// drains it, and the stream's engine hands the slot back once its memcpy is done.
class staging_ring {
 public:
  static constexpr std::size_t chunk_bytes = std::size_t{2} << 20;
  /// Double buffering: the caller fills one chunk while the engine copies the other. More
  /// slots would only spend more of RLIMIT_MEMLOCK, which pinned buffers also need.
  static constexpr std::size_t slot_count = 2;

  staging_ring();   ///< maps and touches the chunks; locking them is the owner's decision
  ~staging_ring();  ///< waits until the engines handed every slot back
  staging_ring(const staging_ring&) = delete;
  staging_ring& operator=(const staging_ring&) = delete;

  [[nodiscard]] std::byte* memory() const noexcept { return memory_.data(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return memory_.bytes(); }

  /// One pageable copy at a time goes through the ring (the driver serialises them as well);
  /// hold the returned lock for the whole copy.
  [[nodiscard]] std::unique_lock<std::mutex> exclusive() { return std::unique_lock(use_mutex_); }

  /// Waits until slot `i` is back, marks it in flight and returns its chunk.
  [[nodiscard]] std::byte* claim(std::size_t i);
  /// Waits until slot `i` is back (after a device-to-staging copy: its data may be read).
  void await(std::size_t i);
  /// Engine side: the memcpy into or out of slot `i` is done.
  void hand_back(std::size_t i) noexcept;
  [[nodiscard]] std::byte* chunk(std::size_t i) const noexcept {
    return memory_.data() + i * chunk_bytes;
  }

 private:
  mapped_region memory_;
  std::mutex use_mutex_;
  std::mutex state_mutex_;
  std::condition_variable returned_cv_;
  std::array<bool, slot_count> in_flight_{};
};

}  // namespace pinbench::device::host
