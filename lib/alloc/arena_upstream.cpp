// The host-emulated device memory: addresses carved from a reserved, never-touched range, with
// exact accounting against a capacity. Nothing here (or anywhere) may dereference them.
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "alloc/upstream.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace pinbench::alloc {

namespace {

constexpr std::size_t kAlignment = 512;  // cudaMalloc's observable grain
constexpr std::size_t kRoundCapacity = std::size_t{2} << 20;
// Address space beyond the capacity, so that allocations never fail for want of a contiguous
// range while capacity remains (a real GPU maps pages virtually), and so that expandable
// segments (each reserves 1 1/8 of the capacity per stream and pool) find room.
constexpr std::size_t kAddressSpaceFactor = 17;
constexpr std::size_t kLargestSpan = std::size_t{1} << 46;  // 64 TiB of the 128 TiB user space

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

class arena_upstream final : public upstream {
 public:
  explicit arena_upstream(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw input_error("the emulated device capacity must be above 0 bytes");
    const std::size_t rounded = round_up(capacity, kRoundCapacity);
    if (rounded > kLargestSpan / kAddressSpaceFactor) {
      throw input_error(
          fmt::format("an emulated device capacity of {} is more than the host "
                      "address space can hold",
                      format_bytes(capacity)));
    }
    span_ = rounded * kAddressSpaceFactor;
    // PROT_NONE and MAP_NORESERVE: address space only, no memory is ever committed.
    void* const base =
        ::mmap(nullptr, span_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      throw device_error(fmt::format("arena: cannot reserve {} of address space: {}",
                                     format_bytes(span_), std::strerror(errno)));
    }
    base_ = reinterpret_cast<std::uintptr_t>(base);
    free_.emplace(base_, span_);
  }

  ~arena_upstream() override { ::munmap(reinterpret_cast<void*>(base_), span_); }

  arena_upstream(const arena_upstream&) = delete;
  arena_upstream& operator=(const arena_upstream&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "arena"; }
  [[nodiscard]] std::string device_label() const override { return "Host-emulated device"; }

  [[nodiscard]] void* allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    const std::size_t size = round_up(bytes, kAlignment);
    if (size > capacity_ - used_) return nullptr;
    const std::uintptr_t address = take(size);
    if (address == 0) return nullptr;
    allocations_.emplace(address, size);
    used_ += size;
    return reinterpret_cast<void*>(address);
  }

  void deallocate(void* ptr, std::size_t /*bytes: the arena knows the size itself*/) override {
    if (ptr == nullptr) return;
    const auto it = allocations_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == allocations_.end())
      throw device_error(fmt::format("arena: {} is not a live allocation", ptr));
    give_back(it->first, it->second);
    used_ -= it->second;
    allocations_.erase(it);
  }

  void synchronize() override {}  // no device work exists to wait for

  [[nodiscard]] std::size_t capacity() const noexcept override { return capacity_; }
  [[nodiscard]] std::size_t used() const noexcept override { return used_; }

  [[nodiscard]] bool supports_virtual_memory() const noexcept override { return true; }

  [[nodiscard]] void* reserve_address(std::size_t bytes) override {
    const std::size_t size = round_up(bytes == 0 ? 1 : bytes, granularity());
    const std::uintptr_t address = take(size);
    if (address == 0) {
      throw device_error(
          fmt::format("arena: no free address range of {} left to reserve", format_bytes(size)));
    }
    reservations_.emplace(address, reservation{size, 0});
    return reinterpret_cast<void*>(address);
  }

  void release_address(void* base, std::size_t /*bytes*/) override {
    const auto it = reservations_.find(reinterpret_cast<std::uintptr_t>(base));
    if (it == reservations_.end())
      throw device_error(fmt::format("arena: {} is not a reserved address range", base));
    used_ -= it->second.mapped_bytes;  // pages still mapped go with the range
    give_back(it->first, it->second.bytes);
    reservations_.erase(it);
  }

  [[nodiscard]] bool map(void* addr, std::size_t bytes) override {
    reservation& r = reservation_of(addr, bytes);
    if (bytes > capacity_ - used_) return false;
    used_ += bytes;
    r.mapped_bytes += bytes;
    return true;
  }

  void unmap(void* addr, std::size_t bytes) override {
    reservation& r = reservation_of(addr, bytes);
    if (bytes > r.mapped_bytes)
      throw device_error(fmt::format("arena: unmapping {} more than was mapped", addr));
    used_ -= bytes;
    r.mapped_bytes -= bytes;
  }

 private:
  struct reservation {
    std::size_t bytes;
    std::size_t mapped_bytes;
  };

  reservation& reservation_of(void* addr, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    auto it = reservations_.upper_bound(a);
    if (it != reservations_.begin()) {
      --it;
      if (a >= it->first && a + bytes <= it->first + it->second.bytes) return it->second;
    }
    throw device_error(fmt::format("arena: [{}, +{}) is not inside a reserved range", addr, bytes));
  }

  /// First fit by address; 0 when no free range is long enough.
  std::uintptr_t take(std::size_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const std::uintptr_t address = it->first;
      const std::size_t rest = it->second - size;
      free_.erase(it);
      if (rest > 0) free_.emplace(address + size, rest);
      return address;
    }
    return 0;
  }

  /// Returns a range to the free map, coalescing with its neighbours.
  void give_back(std::uintptr_t address, std::size_t size) {
    auto next = free_.lower_bound(address);
    if (next != free_.end() && address + size == next->first) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == address) {
        prev->second += size;
        return;
      }
    }
    free_.emplace_hint(next, address, size);
  }

  std::size_t capacity_;
  std::size_t used_ = 0;
  std::uintptr_t base_ = 0;
  std::size_t span_ = 0;
  std::map<std::uintptr_t, std::size_t> free_;  // start -> length
  std::unordered_map<std::uintptr_t, std::size_t> allocations_;
  std::map<std::uintptr_t, reservation> reservations_;
};

}  // namespace

std::unique_ptr<upstream> make_arena_upstream(std::size_t capacity) {
  return std::make_unique<arena_upstream>(capacity);
}

}  // namespace pinbench::alloc
