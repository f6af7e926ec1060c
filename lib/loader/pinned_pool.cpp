#include "loader/pinned_pool.hpp"

#include <algorithm>
#include <bit>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "device/event_stock.hpp"

namespace pinbench::loader {

namespace {

std::string limit_text(const std::optional<std::uint64_t>& v) {
  return v ? format_bytes(*v) : std::string("unlimited");
}

// The backend's refusal, with the limits and what to try.
[[noreturn]] void refuse(std::string_view what) {
  throw pinned_memory_error(fmt::format("{}; {}", what, pinned_limits_hint()));
}

std::unique_ptr<device::host_buffer> alloc_pinned(device::backend& dev, std::size_t bytes) {
  try {
    return dev.alloc_host(bytes, device::host_kind::pinned);
  } catch (const pinned_memory_error& e) {
    refuse(fmt::format("pinned memory for a batch could not be had ({}): {}", format_bytes(bytes),
                       e.what()));
  } catch (const std::bad_alloc&) {
    refuse(fmt::format("pinned memory for a batch could not be had ({}): out of host memory",
                       format_bytes(bytes)));
  }
}

using device::event_stock;

// A block of the caching host allocator, free or lent.
struct pool_block {
  std::unique_ptr<device::host_buffer> buf;
  std::size_t capacity = 0;
  bool leased = false;
  std::vector<std::unique_ptr<device::event>> pending;  // copies that read it
};

// A slot of the ring.
struct ring_slot {
  std::unique_ptr<device::host_buffer> buf;
  std::unique_ptr<device::event> done;
  bool recorded = false;  // `done` guards the copy that last read the slot
  bool leased = false;
  bool lent_before = false;
};

// What both pools share: their lock, their figures, and the check that a lease given back is
// one of theirs and still lent.
template <class Entry>
class leasing_pool : public pinned_pool {
 public:
  [[nodiscard]] pinned_stats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }

 protected:
  explicit leasing_pool(std::string_view what) : what_(what) {}

  // The entry a lease names; throws when the lease is not one of this pool's lent ones.
  Entry& checked(const pinned_lease& lease) {
    if (lease.id >= entries_.size() || entries_[lease.id].buf->data() != lease.data ||
        !entries_[lease.id].leased)
      throw device_error(
          fmt::format("{}: a lease was given back twice or to the wrong pool", what_));
    return entries_[lease.id];
  }

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  pinned_stats stats_;

 private:
  std::string_view what_;
};

class caching_host_allocator final : public leasing_pool<pool_block> {
 public:
  caching_host_allocator(device::backend& dev, std::size_t limit_bytes)
      : leasing_pool("pinned pool"), dev_(dev), limit_bytes_(limit_bytes), events_(dev) {}

  ~caching_host_allocator() override {
    // A block may still be read by a copy in flight: wait for them before freeing.
    for (auto& b : entries_)
      for (auto& e : b.pending) dev_.synchronize(*e);
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "per_batch"; }

  [[nodiscard]] pinned_lease acquire(std::size_t bytes) override {
    const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(bytes, 1));
    std::lock_guard lock(mutex_);
    collect_completed();
    auto& free_list = free_[capacity];
    std::uint32_t id = 0;
    if (!free_list.empty()) {
      id = free_list.front();
      free_list.pop_front();
      ++stats_.reuses;
    } else {
      if (limit_bytes_ != 0 && stats_.reserved_bytes + capacity > limit_bytes_)
        refuse(fmt::format(
            "pinned_limit reached: a batch needs a {} block, the pinned pool holds {} of its "
            "pinned_limit {} ({} blocks, {} in use)",
            format_bytes(capacity), format_bytes(stats_.reserved_bytes), format_bytes(limit_bytes_),
            stats_.blocks, format_bytes(stats_.in_use_bytes)));
      pool_block b;
      b.buf = alloc_pinned(dev_, capacity);
      b.capacity = capacity;
      entries_.push_back(std::move(b));
      id = static_cast<std::uint32_t>(entries_.size() - 1);
      ++stats_.host_allocs;
      ++stats_.blocks;
      stats_.reserved_bytes += capacity;
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    }
    auto& b = entries_[id];
    b.leased = true;
    stats_.in_use_bytes += capacity;
    return {b.buf->data(), bytes, capacity, id, b.buf->page_locked()};
  }

  void release(const pinned_lease& lease, device::stream& s) override {
    std::lock_guard lock(mutex_);
    auto& b = checked(lease);
    auto e = events_.take();
    dev_.record(*e, s);
    b.pending.push_back(std::move(e));
    b.leased = false;
    // In use until its copies completed: collect_completed() returns it to the free list.
  }

  void discard(const pinned_lease& lease) override {
    std::lock_guard lock(mutex_);
    auto& b = checked(lease);
    b.leased = false;
    if (b.pending.empty()) make_free(lease.id);
  }

 private:
  void make_free(std::uint32_t id) {
    stats_.in_use_bytes -= entries_[id].capacity;
    free_[entries_[id].capacity].push_back(id);
  }

  // PyTorch's rule: a freed block becomes reusable once every event recorded for it completed.
  void collect_completed() {
    for (std::uint32_t id = 0; id < entries_.size(); ++id) {
      auto& b = entries_[id];
      if (b.leased || b.pending.empty()) continue;
      while (!b.pending.empty() && dev_.query(*b.pending.back())) {
        events_.give(std::move(b.pending.back()));
        b.pending.pop_back();
      }
      if (b.pending.empty()) make_free(id);
    }
  }

  device::backend& dev_;
  const std::size_t limit_bytes_;
  std::map<std::size_t, std::deque<std::uint32_t>> free_;
  event_stock events_;
};

class pinned_ring final : public leasing_pool<ring_slot> {
 public:
  pinned_ring(device::backend& dev, std::size_t slots, std::size_t slot_bytes,
              std::size_t limit_bytes)
      : leasing_pool("pinned ring"), dev_(dev), slot_bytes_(slot_bytes) {
    if (slots == 0) throw input_error("pinned ring: needs at least one slot");
    const std::uint64_t total = static_cast<std::uint64_t>(slots) * slot_bytes;
    if (limit_bytes != 0 && total > limit_bytes)
      refuse(fmt::format(
          "pinned_limit reached: a ring of {} slots of {} needs {}, pinned_limit is {}", slots,
          format_bytes(slot_bytes), format_bytes(total), format_bytes(limit_bytes)));
    for (std::size_t i = 0; i < slots; ++i) {
      ring_slot s;
      s.buf = alloc_pinned(dev_, slot_bytes);
      s.done = dev_.create_event();
      entries_.push_back(std::move(s));
      free_.push_back(static_cast<std::uint32_t>(i));
      ++stats_.host_allocs;
    }
    stats_.blocks = slots;
    stats_.reserved_bytes = stats_.peak_reserved_bytes = total;
  }

  ~pinned_ring() override {
    for (auto& s : entries_)
      if (s.recorded) dev_.synchronize(*s.done);
  }

  [[nodiscard]] std::string_view name() const noexcept override { return "ring"; }

  [[nodiscard]] pinned_lease acquire(std::size_t bytes) override {
    if (bytes > slot_bytes_)
      throw pinned_memory_error(fmt::format("pinned ring: a batch of {} does not fit its {} slots",
                                            format_bytes(bytes), format_bytes(slot_bytes_)));
    std::unique_lock lock(mutex_);
    if (free_.empty()) ++stats_.waits;
    returned_.wait(lock, [&] { return !free_.empty(); });
    const std::uint32_t id = free_.front();
    free_.pop_front();
    auto& s = entries_[id];
    s.leased = true;
    stats_.in_use_bytes += slot_bytes_;
    const bool recorded = s.recorded;
    lock.unlock();
    // The copy that last read this slot must have completed before it is written again.
    if (recorded) {
      if (!dev_.query(*s.done)) {
        std::lock_guard count(mutex_);
        ++stats_.waits;
      }
      dev_.synchronize(*s.done);
    }
    lock.lock();
    s.recorded = false;
    if (s.lent_before) ++stats_.reuses;  // as the caching allocator counts: any second lending
    s.lent_before = true;
    return {s.buf->data(), bytes, slot_bytes_, id, s.buf->page_locked()};
  }

  void release(const pinned_lease& lease, device::stream& st) override {
    {
      std::lock_guard lock(mutex_);
      auto& s = checked(lease);
      dev_.record(*s.done, st);
      s.recorded = true;
      give_back(lease.id);
    }
    returned_.notify_all();
  }

  void discard(const pinned_lease& lease) override {
    {
      std::lock_guard lock(mutex_);
      (void)checked(lease);
      give_back(lease.id);
    }
    returned_.notify_all();
  }

 private:
  void give_back(std::uint32_t id) {
    entries_[id].leased = false;
    stats_.in_use_bytes -= slot_bytes_;
    free_.push_back(id);
  }

  device::backend& dev_;
  const std::size_t slot_bytes_;
  std::condition_variable returned_;
  std::deque<std::uint32_t> free_;
};

}  // namespace

std::string pinned_limits_hint() {
  const host_info h = read_host_info();
  return fmt::format(
      "limits: RLIMIT_MEMLOCK {} (hard {}), host memory available {} (see `pinbench info`); "
      "try a smaller batch_size, fewer num_workers or a smaller prefetch_factor, pin_mode "
      "\"ring\", or a larger pinned_limit",
      limit_text(h.memlock_soft_bytes), limit_text(h.memlock_hard_bytes),
      format_bytes(h.available_bytes));
}

std::unique_ptr<pinned_pool> make_caching_host_allocator(device::backend& dev,
                                                         std::size_t limit_bytes) {
  return std::make_unique<caching_host_allocator>(dev, limit_bytes);
}

std::unique_ptr<pinned_pool> make_pinned_ring(device::backend& dev, std::size_t slots,
                                              std::size_t slot_bytes, std::size_t limit_bytes) {
  return std::make_unique<pinned_ring>(dev, slots, slot_bytes, limit_bytes);
}

}  // namespace pinbench::loader
