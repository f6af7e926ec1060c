// The host flags that gate kernels spin on: slots in one mapped pinned allocation, reused only
// after the kernel that used a slot has exited, so memory is never freed under a running kernel.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "device/backend.hpp"

namespace pinbench::device::cuda {

class gate_pool {
 public:
  static constexpr std::size_t slot_count = 256;
  /// How long a gate kernel waits for its release before letting the stream go on anyway.
  static constexpr auto kernel_timeout_ns = static_cast<std::uint64_t>(gate_timeout_ns);

  /// Allocates the flags (cudaHostAlloc, mapped) on `device`, which must be current.
  /// Throws device_error or pinned_memory_error.
  explicit gate_pool(int device);
  /// Releases every slot, waits for the device to finish, then frees the flags.
  ~gate_pool();
  gate_pool(const gate_pool&) = delete;
  gate_pool& operator=(const gate_pool&) = delete;

  struct slot {
    std::size_t index = 0;
    std::uint32_t* device_words = nullptr;  ///< what the gate kernel gets
  };

  /// Arms a free slot (release flag 0, state armed). Waits while every slot is held or still
  /// has a kernel on it; throws device_error if none frees up within the kernel timeout.
  [[nodiscard]] slot acquire();
  /// Sets the slot's release flag. Idempotent.
  void release(std::size_t index) noexcept;
  /// The gate is gone: the slot is reused once its kernel has exited.
  void give_back(std::size_t index) noexcept;
  /// The kernel was never launched: the slot is free at once.
  void abandon(std::size_t index) noexcept;
  /// The held slot's owner voided its timing: a timeout there is not counted.
  void discard_timing(std::size_t index) noexcept;
  /// How many gate kernels timed out (not released in time) since the last call, leaving out
  /// those whose timing was discarded. Slots still
  /// held by a gate are left for their owner to read (timed_out) and counted once given back.
  [[nodiscard]] std::size_t take_timeouts() noexcept;
  /// Whether the kernel on a held slot gave up waiting: read it after the stream passed it.
  [[nodiscard]] bool timed_out(std::size_t index) const noexcept;

 private:
  // Each slot owns a 64-byte line: word 0 = release flag (host writes), word 1 = state.
  static constexpr std::size_t words_per_slot = 16;
  [[nodiscard]] std::uint32_t* host_words(std::size_t index) const noexcept {
    return host_ + index * words_per_slot;
  }
  [[nodiscard]] std::size_t count_timeouts_locked() noexcept;

  int device_index_;
  std::uint32_t* host_ = nullptr;    // the flags as the host sees them
  std::uint32_t* mapped_ = nullptr;  // the same memory as the device sees it
  std::mutex mutex_;
  std::array<bool, slot_count> held_{};       // a gate object owns the slot
  std::array<bool, slot_count> discarded_{};  // its owner voided the timing behind it
  std::size_t next_ = 0;
  std::size_t timeouts_ = 0;
};

}  // namespace pinbench::device::cuda
