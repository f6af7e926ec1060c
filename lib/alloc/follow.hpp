// A replay that follows what PyTorch did: an emulated device that hands the caching allocator
// the addresses PyTorch's segments had (so that ties broken by address break as PyTorch's did),
// fails a cudaMalloc where PyTorch released cached memory before its own (so that the retry path
// releases what PyTorch's released), and checks every decision the allocator makes against
// PyTorch's, in order. The first difference ends the following: from there on the replay goes
// its own way on fresh addresses, and the check says where it parted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "alloc/allocator.hpp"
#include "alloc/recording.hpp"
#include "alloc/upstream.hpp"

namespace pinbench::alloc {

class decision_follower final : public upstream, public decision_observer {
 public:
  /// An emulated device of `capacity` bytes for a replay of `rec` (which must outlive it).
  /// `follow`: PyTorch's decisions are followed and checked (a replay under the snapshot's own
  /// settings); otherwise only the start state sits at PyTorch's addresses.
  decision_follower(const recording& rec, std::uint64_t capacity, bool follow);

  /// The replay event now in hand; the first call also ends the start state's adoption
  /// (allocator::adopt takes the start segments' addresses before it).
  void at_event(std::uint64_t index) noexcept;

  /// The replay put the current event's block at `address`.
  void on_placement(std::uint64_t address, std::uint64_t size) noexcept;

  /// The check so far (complete once the events are all replayed).
  [[nodiscard]] decision_check check() const;

  // ---- the decisions (decision_observer) ----
  void on_decision(const allocator_decision& d) override;

  // ---- the emulated device (upstream) ----
  [[nodiscard]] std::string_view name() const noexcept override { return "arena"; }
  [[nodiscard]] std::string device_label() const override { return "Host-emulated device"; }
  [[nodiscard]] void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) override;
  void synchronize() override {}
  [[nodiscard]] std::size_t capacity() const noexcept override { return capacity_; }
  [[nodiscard]] std::size_t used() const noexcept override { return used_; }
  [[nodiscard]] bool supports_virtual_memory() const noexcept override { return true; }
  [[nodiscard]] void* reserve_address(std::size_t bytes) override;
  void release_address(void* base, std::size_t bytes) override;
  [[nodiscard]] bool map(void* addr, std::size_t bytes) override;
  void unmap(void* addr, std::size_t bytes) override;

 private:
  /// PyTorch's next decision while the replay is still in step with it.
  [[nodiscard]] const recorded_decision* expected() const noexcept;
  /// True when PyTorch's next step was a release or an out-of-memory error where the replay
  /// now asks the device for memory: that cudaMalloc fails, as PyTorch's did.
  [[nodiscard]] bool fail_as_pytorch(std::uint64_t bytes) noexcept;
  void diverge(std::optional<allocator_decision> ours);
  [[nodiscard]] std::uint64_t fresh(std::uint64_t bytes);
  [[nodiscard]] bool range_free(std::uint64_t address, std::uint64_t bytes) const;

  const recording& rec_;
  const std::size_t capacity_;
  const bool follow_;
  std::size_t used_ = 0;

  bool adopting_ = true;
  std::size_t next_start_segment_ = 0;  // the next whole start segment adopt asks for
  const std::vector<std::uint64_t> start_reservations_;  // in the order adopt reserves them
  std::size_t next_start_reservation_ = 0;
  std::size_t next_reservation_ = 0;  // in rec_.reservation_bases

  bool in_step_;
  std::size_t cursor_ = 0;  // PyTorch's next decision (oom entries included)
  std::uint64_t event_ = 0;
  std::uint64_t replayed_ = 0, identical_ = 0, forced_failures_ = 0;
  std::uint64_t pytorch_peak_reserved_ = 0;
  std::optional<std::uint64_t> device_limit_;  // from the cudaMalloc calls failed as PyTorch's
  std::optional<divergence> first_;
  std::optional<placement_difference> first_placement_;

  std::uint64_t next_fresh_ = 0;
  std::map<std::uint64_t, std::uint64_t> segments_;      // address -> bytes (cudaMalloc)
  std::map<std::uint64_t, std::uint64_t> reservations_;  // base -> bytes
  struct mapped_page {
    std::uint64_t bytes, owner;  // owner: its reservation's base
  };
  std::map<std::uint64_t, mapped_page> mapped_;  // page address -> its bytes and reservation
};

}  // namespace pinbench::alloc
