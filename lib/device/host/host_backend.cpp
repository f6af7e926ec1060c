#include "device/host/host_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "device/host/host_memory.hpp"
#include "device/host/pinned_registry.hpp"
#include "device/host/staging_ring.hpp"
#include "device/host/stream_thread.hpp"

namespace pinbench::device {
namespace host {
namespace {

constexpr std::string_view not_locked_note = "pinned memory on the host backend is not page-locked";

/// Warnings, each kept once per distinct cause. Thread-safe.
class warning_log {
 public:
  void add(const std::string& cause, std::string message) {
    std::lock_guard lock(mutex_);
    if (causes_.insert(cause).second) messages_.push_back(std::move(message));
  }
  [[nodiscard]] std::vector<std::string> list() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::string> causes_;
  std::vector<std::string> messages_;
};

std::string bytes_text(std::size_t bytes) {
  return fmt::format("{} ({} bytes)", format_bytes(bytes), bytes);
}

/// State shared by the backend and everything it hands out (buffers, streams), so that an
/// object destroyed after its backend, against the contract, still finds what it needs.
class device_core {
 public:
  explicit device_core(const backend_options& options)
      : options_(options),
        capacity_bytes_(options.host_device_capacity != 0
                            ? options.host_device_capacity
                            : static_cast<std::size_t>(physical_memory_bytes() / 2)) {}

  [[nodiscard]] const backend_options& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t capacity_bytes() const noexcept { return capacity_bytes_; }
  [[nodiscard]] pinned_registry& pinned() noexcept { return pinned_; }
  [[nodiscard]] warning_log& warnings() noexcept { return warnings_; }

  // ---- device memory: exact accounting against the capacity --------------------------------
  [[nodiscard]] void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;  // cudaMalloc(0) succeeds with a null pointer
    {
      std::lock_guard lock(memory_mutex_);
      if (bytes > capacity_bytes_ - used_bytes_) {
        throw out_of_memory(
            fmt::format("host backend: out of device memory: requested {}, {} in use, capacity {}",
                        bytes_text(bytes), bytes_text(used_bytes_), bytes_text(capacity_bytes_)));
      }
      used_bytes_ += bytes;  // reserved now; mapping and touching happen outside the lock
    }
    mapped_region region;
    try {
      region = mapped_region(bytes);
      region.keep_from_children();  // device memory: never a loader worker's to touch
      void* const ptr = region.data();
      std::lock_guard lock(memory_mutex_);
      allocations_.emplace(ptr, std::move(region));
      return ptr;
    } catch (...) {
      std::lock_guard lock(memory_mutex_);
      used_bytes_ -= bytes;
      throw;
    }
  }

  /// False when `ptr` is not a live allocation of this device. Synchronises the device first.
  bool free(void* ptr) {
    if (ptr == nullptr) return true;
    synchronize_all();  // cudaFree waits for all work that might still use the memory
    std::unordered_map<const void*, mapped_region>::node_type node;
    {
      std::lock_guard lock(memory_mutex_);
      node = allocations_.extract(ptr);
      if (node.empty()) return false;
      used_bytes_ -= node.mapped().bytes();
    }
    return true;  // the node, and with it the mapping, goes away outside the lock
  }

  [[nodiscard]] memory_info memory() const {
    std::lock_guard lock(memory_mutex_);
    return {capacity_bytes_ - used_bytes_, capacity_bytes_};
  }

  // ---- pinning --------------------------------------------------------------------------------
  /// mlock with the fallback: false (memory stays unlocked) and a warning once per cause.
  bool pin(const void* ptr, std::size_t bytes) {
    if (options_.host_refuse_pinning) {
      warnings_.add("pin:refused",
                    fmt::format("pinning refused by the fault switch (host_refuse_pinning, "
                                "run --host-fault refuse-pinning): {}",
                                not_locked_note));
      return false;
    }
    const int err = lock_pages(ptr, bytes);
    if (err == 0) return true;
    warnings_.add(fmt::format("pin:{}", err),
                  fmt::format("mlock of {} failed ({}): {}", format_bytes(bytes),
                              lock_failure_cause(err), not_locked_note));
    return false;
  }

  // ---- engines ----------------------------------------------------------------------------------
  void add_engine(engine* e) {
    std::lock_guard lock(engines_mutex_);
    engines_.push_back(e);
  }
  void remove_engine(engine* e) {
    std::lock_guard lock(engines_mutex_);
    engines_.erase(std::remove(engines_.begin(), engines_.end(), e), engines_.end());
  }
  /// cudaDeviceSynchronize: every stream drained. Holding the lock keeps engines alive meanwhile.
  void synchronize_all() {
    std::lock_guard lock(engines_mutex_);
    for (engine* e : engines_) e->drain();
  }

 private:
  const backend_options options_;
  const std::size_t capacity_bytes_;
  pinned_registry pinned_;
  warning_log warnings_;

  mutable std::mutex memory_mutex_;
  std::size_t used_bytes_ = 0;
  std::unordered_map<const void*, mapped_region> allocations_;

  std::mutex engines_mutex_;
  std::vector<engine*> engines_;
};

// ---- handles ----------------------------------------------------------------------------------

class host_device_buffer final : public device_buffer {
 public:
  host_device_buffer(std::shared_ptr<device_core> core, void* ptr, std::size_t bytes)
      : core_(std::move(core)), data_(static_cast<std::byte*>(ptr)), bytes_(bytes) {}
  ~host_device_buffer() override { core_->free(data_); }
  host_device_buffer(const host_device_buffer&) = delete;
  host_device_buffer& operator=(const host_device_buffer&) = delete;

  [[nodiscard]] std::byte* data() noexcept override { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept override { return bytes_; }

 private:
  std::shared_ptr<device_core> core_;
  std::byte* data_;
  std::size_t bytes_;
};

class host_memory_buffer final : public host_buffer {
 public:
  host_memory_buffer(std::shared_ptr<device_core> core, mapped_region region, host_kind kind,
                     bool locked)
      : core_(std::move(core)), region_(std::move(region)), kind_(kind), locked_(locked) {}
  ~host_memory_buffer() override {
    if (region_.data() == nullptr) return;
    if (kind_ == host_kind::pageable) {
      // A range registered inside this buffer and never unregistered must not outlive it.
      core_->pinned().erase_within(region_.data(), region_.bytes());
    } else {
      core_->synchronize_all();  // cudaFreeHost synchronises: a queued copy may still read it
      core_->pinned().remove(region_.data());
    }
  }
  host_memory_buffer(const host_memory_buffer&) = delete;
  host_memory_buffer& operator=(const host_memory_buffer&) = delete;

  [[nodiscard]] std::byte* data() noexcept override { return region_.data(); }
  [[nodiscard]] std::size_t bytes() const noexcept override { return region_.bytes(); }
  [[nodiscard]] host_kind kind() const noexcept override { return kind_; }
  [[nodiscard]] bool page_locked() const noexcept override { return locked_; }

 private:
  std::shared_ptr<device_core> core_;
  mapped_region region_;
  host_kind kind_;
  bool locked_;
};

class host_stream final : public stream {
 public:
  explicit host_stream(std::shared_ptr<device_core> core)
      : core_(std::move(core)), engine_(core_->options().host_slowdown) {
    core_->add_engine(&engine_);
  }
  // Unregistered first, so that no device-wide synchronisation waits on it; engine_'s own
  // destructor then drains the queue and joins the thread.
  ~host_stream() override { core_->remove_engine(&engine_); }
  host_stream(const host_stream&) = delete;
  host_stream& operator=(const host_stream&) = delete;

  [[nodiscard]] engine& queue() noexcept { return engine_; }
  [[nodiscard]] const device_core* owner() const noexcept { return core_.get(); }

 private:
  std::shared_ptr<device_core> core_;
  engine engine_;
};

class host_event final : public event {
 public:
  [[nodiscard]] const std::shared_ptr<event_state>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<event_state> state_ = std::make_shared<event_state>();
};

// A gate that timed out behind a timing its owner kept gets the run-level warning, as on CUDA.
class host_gate final : public gate {
 public:
  host_gate(std::shared_ptr<device_core> core, std::shared_ptr<gate_state> state)
      : core_(std::move(core)), state_(std::move(state)) {}
  ~host_gate() override {
    state_->release();
    if (!state_->timed_out() || discarded_) return;
    try {
      core_->warnings().add("gate:timeout", gate_timeout_warning());
    } catch (...) {  // a destructor: the warning is lost rather than the process
    }
  }
  host_gate(const host_gate&) = delete;
  host_gate& operator=(const host_gate&) = delete;
  void release() noexcept override { state_->release(); }
  [[nodiscard]] bool timed_out() const noexcept override { return state_->timed_out(); }
  void discard_timing() noexcept override { discarded_ = true; }

 private:
  std::shared_ptr<device_core> core_;
  std::shared_ptr<gate_state> state_;
  bool discarded_ = false;
};

// ---- the backend ------------------------------------------------------------------------------

class host_backend final : public backend {
 public:
  explicit host_backend(const backend_options& options)
      : core_(std::make_shared<device_core>(options)) {
    // The driver's staging buffers are page-locked; here that costs RLIMIT_MEMLOCK budget.
    if (const int err = lock_pages(staging_.memory(), staging_.bytes()); err != 0) {
      core_->warnings().add(
          fmt::format("staging:{}", err),
          fmt::format("mlock of the {} staging ring failed ({}): pageable copies are staged "
                      "through unlocked memory",
                      format_bytes(staging_.bytes()), lock_failure_cause(err)));
    }
  }

  // Drains every stream so that no engine still reads or writes the staging ring, which is
  // freed next; staging_ is declared after core_ and so destroyed first.
  ~host_backend() override { core_->synchronize_all(); }

  [[nodiscard]] platform_kind kind() const noexcept override { return platform_kind::host; }

  [[nodiscard]] std::string host_register_unsupported() const override {
    if (!core_->options().host_no_register) return {};
    return "host registration refused by the fault switch (run --host-fault no-host-register), "
           "as a device whose cudaDevAttrHostRegisterSupported is 0 does";
  }

  // No link between host and emulated device: the transfer engine compares with a memcpy.
  [[nodiscard]] link_ceiling host_link() const override {
    return {.reason = "none: measured against memcpy", .measure_host_memcpy = true};
  }

  [[nodiscard]] description describe() const override {
    const std::size_t capacity = core_->capacity_bytes();
    description d;
    d.name = "host emulation (" + read_host_info().cpu + ")";
    d.emulated = true;
    d.memory_bytes = capacity;
    d.capacity_bytes = capacity;
    return d;
  }

  [[nodiscard]] std::vector<std::string> warnings() const override {
    return core_->warnings().list();
  }

  // ---- memory -------------------------------------------------------------------------------
  [[nodiscard]] std::unique_ptr<device_buffer> alloc_device(std::size_t bytes) override {
    void* ptr = core_->allocate(bytes);
    try {
      return std::make_unique<host_device_buffer>(core_, ptr, bytes);
    } catch (...) {
      core_->free(ptr);
      throw;
    }
  }

  [[nodiscard]] void* device_malloc(std::size_t bytes) override { return core_->allocate(bytes); }

  void device_free(void* ptr) override {
    if (!core_->free(ptr))
      throw device_error(fmt::format("device_free: {} is not a live device allocation", ptr));
  }

  [[nodiscard]] memory_info device_memory() const override { return core_->memory(); }

  [[nodiscard]] std::unique_ptr<host_buffer> alloc_host(std::size_t bytes,
                                                        host_kind kind) override {
    mapped_region region(bytes);
    bool locked = false;
    if (kind != host_kind::pageable && bytes > 0) {
      region.keep_from_children();  // as the driver maps pinned memory
      if (kind == host_kind::pinned_wc) {
        core_->warnings().add("pinned_wc",
                              "write-combined host memory is not emulated: "
                              "pinned_wc behaves as pinned on the host backend");
      }
      locked = core_->pin(region.data(), bytes);
      // Registered even when unlocked: copies from it keep pinned semantics either way.
      if (!core_->pinned().add(region.data(), bytes, locked))
        throw device_error("alloc_host: a fresh mapping overlaps a registered range");
    }
    return std::make_unique<host_memory_buffer>(core_, std::move(region), kind, locked);
  }

  void register_host(void* ptr, std::size_t bytes) override {
    if (ptr == nullptr || bytes == 0)
      throw device_error("register_host: a null pointer or an empty range cannot be registered");
    // Reserved unlocked first, so that a range that overlaps another is refused before
    // munlock could touch the other's pages.
    if (!core_->pinned().add(ptr, bytes, false)) {
      throw device_error(fmt::format(
          "register_host: [{}, +{}) overlaps a range that is already registered", ptr, bytes));
    }
    if (core_->pin(ptr, bytes)) core_->pinned().set_locked(ptr, true);
  }

  void unregister_host(void* ptr) override {
    core_->synchronize_all();  // as cudaHostUnregister: no queued copy may still rely on it
    const auto r = core_->pinned().remove(ptr);
    if (!r) throw device_error(fmt::format("unregister_host: {} is not registered", ptr));
    if (r->locked) unlock_pages(ptr, r->bytes);
  }

  // ---- streams and events -------------------------------------------------------------------
  [[nodiscard]] std::unique_ptr<stream> create_stream() override {
    return std::make_unique<host_stream>(core_);
  }

  [[nodiscard]] std::unique_ptr<event> create_event() override {
    return std::make_unique<host_event>();
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, copy_dir dir, stream& s) override {
    engine& q = engine_of(s);
    if (bytes == 0) return;
    if (dst == nullptr || src == nullptr) throw device_error("copy_async: null pointer");
    auto* const to = static_cast<std::byte*>(dst);
    const auto* const from = static_cast<const std::byte*>(src);
    switch (dir) {
      case copy_dir::d2d:
        q.enqueue(op::copy(to, from, bytes));
        return;
      case copy_dir::h2d:
        if (core_->pinned().contains(src, bytes))
          q.enqueue(op::copy(to, from, bytes));
        else
          staged_h2d(q, to, from, bytes);
        return;
      case copy_dir::d2h:
        if (core_->pinned().contains(dst, bytes))
          q.enqueue(op::copy(to, from, bytes));
        else
          staged_d2h(q, to, from, bytes);
        return;
    }
  }

  void launch_compute(stream& s, std::int64_t duration_ns) override {
    engine_of(s).enqueue(op::compute(duration_ns));
  }

  [[nodiscard]] std::unique_ptr<gate> launch_gate(stream& s) override {
    engine& q = engine_of(s);
    auto state = std::make_shared<gate_state>(next_gate_timeout_ns());
    auto handle = std::make_unique<host_gate>(core_, state);
    q.enqueue(op::hold(std::move(state)));
    return handle;
  }

  void record(event& e, stream& s) override {
    engine& q = engine_of(s);
    const auto& state = state_of(e);
    q.enqueue(op::record(state, state->begin_recording()));
  }

  void wait(stream& s, event& e) override {
    engine& q = engine_of(s);
    const auto& state = state_of(e);
    const std::uint64_t generation = state->current();
    // Waiting on a never-recorded or already completed recording is a no-op, as in CUDA.
    if (state->is_complete(generation)) return;
    q.enqueue(op::wait(state, generation));
  }

  void synchronize(event& e) override {
    const auto& state = state_of(e);
    state->wait_for(state->current());
  }

  [[nodiscard]] bool query(event& e) override {
    const auto& state = state_of(e);
    return state->is_complete(state->current());
  }

  void synchronize(stream& s) override { engine_of(s).drain(); }

  void synchronize() override { core_->synchronize_all(); }

  [[nodiscard]] double elapsed_ns(event& start, event& end) override {
    const auto t0 = state_of(start)->timestamp_ns();
    const auto t1 = state_of(end)->timestamp_ns();
    if (!t0 || !t1) {
      throw device_error(fmt::format("elapsed_ns: the {} event was not recorded or not completed",
                                     !t0 ? "start" : "end"));
    }
    return static_cast<double>(*t1 - *t0);
  }

 private:
  [[nodiscard]] engine& engine_of(stream& s) const {
    auto* const hs = dynamic_cast<host_stream*>(&s);
    if (hs == nullptr || hs->owner() != core_.get())
      throw device_error("host backend: the stream was not created by this backend");
    return hs->queue();
  }

  [[nodiscard]] static const std::shared_ptr<event_state>& state_of(event& e) {
    auto* const he = dynamic_cast<host_event*>(&e);
    if (he == nullptr)
      throw device_error("host backend: the event was not created by a host backend");
    return he->state();
  }

  // cudaMemcpyAsync from pageable memory: the stream's earlier work completes first, then the
  // calling thread copies the source chunk by chunk into the staging ring while the engine
  // moves each staged chunk on. The call returns once the last chunk is staged.
  void staged_h2d(engine& q, std::byte* dst, const std::byte* src, std::size_t bytes) {
    q.drain();
    const auto exclusive = staging_.exclusive();
    std::size_t slot = 0;
    for (std::size_t offset = 0; offset < bytes; offset += staging_ring::chunk_bytes) {
      const std::size_t n = std::min(staging_ring::chunk_bytes, bytes - offset);
      std::byte* const staged = staging_.claim(slot);
      std::memcpy(staged, src + offset, n);
      q.enqueue(op::staged_copy(dst + offset, staged, n, staging_, slot));
      slot = (slot + 1) % staging_ring::slot_count;
    }
  }

  // To pageable memory the copy is synchronous: the engine fills staging chunks ahead while the
  // calling thread empties them into `dst`; the call returns once the data is there.
  void staged_d2h(engine& q, std::byte* dst, const std::byte* src, std::size_t bytes) {
    constexpr std::size_t chunk = staging_ring::chunk_bytes;
    constexpr std::size_t slots = staging_ring::slot_count;
    q.drain();
    const auto exclusive = staging_.exclusive();
    const std::size_t chunks = (bytes + chunk - 1) / chunk;
    const auto request = [&](std::size_t i) {
      const std::size_t offset = i * chunk;
      const std::size_t slot = i % slots;
      std::byte* const staged = staging_.claim(slot);
      q.enqueue(
          op::staged_copy(staged, src + offset, std::min(chunk, bytes - offset), staging_, slot));
    };
    for (std::size_t i = 0; i < std::min(chunks, slots); ++i) request(i);
    for (std::size_t i = 0; i < chunks; ++i) {
      const std::size_t offset = i * chunk;
      staging_.await(i % slots);
      std::memcpy(dst + offset, staging_.chunk(i % slots), std::min(chunk, bytes - offset));
      if (i + slots < chunks) request(i + slots);
    }
  }

  // The fault switch host_gate_timeouts: the first N gates let their stream go at once.
  std::int64_t next_gate_timeout_ns() {
    const std::size_t n = gates_launched_.fetch_add(1, std::memory_order_relaxed);
    return n < core_->options().host_gate_timeouts ? 0 : gate_timeout_ns;
  }

  std::shared_ptr<device_core> core_;
  staging_ring staging_;
  std::atomic<std::size_t> gates_launched_{0};
};

}  // namespace
}  // namespace host

std::unique_ptr<backend> make_host_backend(const backend_options& options) {
  return std::make_unique<host::host_backend>(options);
}

}  // namespace pinbench::device
