// The device backend interface: memory, streams, events, copies and synthetic compute, with
// CUDA's semantics. Two implementations: cuda (the real thing) and host (an honest emulation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/pci_link.hpp"

namespace pinbench::device {

/// How a host buffer is allocated.
enum class host_kind {
  pageable,   ///< malloc'd, every page touched
  pinned,     ///< cudaHostAlloc (host: mlock'ed)
  pinned_wc,  ///< cudaHostAlloc write-combined (host: same as pinned, noted in the report)
  registered  ///< malloc'd, then cudaHostRegister (host: mlock)
};
[[nodiscard]] std::string_view to_string(host_kind k) noexcept;

enum class copy_dir { h2d, d2h, d2d };

/// A host buffer owned by the backend that made it. Move-only; freed in the destructor.
class host_buffer {
 public:
  virtual ~host_buffer() = default;
  [[nodiscard]] virtual std::byte* data() noexcept = 0;
  [[nodiscard]] virtual std::size_t bytes() const noexcept = 0;
  [[nodiscard]] virtual host_kind kind() const noexcept = 0;
  /// False when pinning was asked for but the memory could not be locked (host backend's
  /// fallback); the backend then also records a warning.
  [[nodiscard]] virtual bool page_locked() const noexcept = 0;
};

/// Device memory owned by the backend that made it (cudaMalloc / the host arena).
class device_buffer {
 public:
  virtual ~device_buffer() = default;
  [[nodiscard]] virtual std::byte*
  data() noexcept = 0;  ///< a device pointer: not for the host on CUDA
  [[nodiscard]] virtual std::size_t bytes() const noexcept = 0;
};

/// A non-blocking stream (never synchronises with other streams implicitly).
class stream {
 public:
  virtual ~stream() = default;
};

/// A timing event.
class event {
 public:
  virtual ~event() = default;
};

/// How long a gate holds its stream when nobody releases it; then the stream goes on by itself.
inline constexpr std::int64_t gate_timeout_ns = 10'000'000'000;
/// At most this many copies are queued behind one gate. The driver's launch queue is finite:
/// once it is full, enqueueing blocks the host thread, which then cannot release the gate (the
/// deadlock nvbench warns of; the timeout ends it, with the sample void). Larger batches are
/// measured as several gated chunks.
inline constexpr int max_copies_behind_gate = 64;

/// Holds a stream still until released (CUDA: a kernel spinning on a host flag). Releasing is
/// idempotent and the destructor releases, so a stream is never left blocked.
class gate {
 public:
  virtual ~gate() = default;
  virtual void release() noexcept = 0;
  /// Once the stream has passed the gate (synchronise first): true when it was not released
  /// within gate_timeout_ns and let the stream go by itself, so the work queued behind it did
  /// not wait for the release and a timing that relies on the gate is void.
  [[nodiscard]] virtual bool timed_out() const noexcept = 0;
  /// The owner voided the timing behind this gate and takes it again: a timeout here is
  /// recorded in its case and leaves no run-level warning (gate_timeout_warning).
  virtual void discard_timing() noexcept = 0;
};

/// The backend's run-level warning for a gate that timed out behind a timing that was kept.
[[nodiscard]] std::string gate_timeout_warning();

struct memory_info {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

/// The stream-ordered allocator's pool (cudaMemPoolAttr*): memory the pool holds from the
/// device (reserved) and what is handed out of it (used), with their high-water marks.
struct async_pool_usage {
  std::uint64_t reserved_bytes = 0, reserved_peak_bytes = 0;
  std::uint64_t used_bytes = 0, used_peak_bytes = 0;
};

/// What a backend says of its device, for the result's environment and `pinbench info`.
struct description {
  std::string name;
  bool emulated = false;
  std::uint64_t memory_bytes = 0;
  std::optional<std::uint64_t> capacity_bytes;       ///< host: the emulated capacity
  std::optional<std::string> uuid, driver, runtime;  ///< none on the host backend (null)
  std::optional<pcie_link> pcie;                     ///< none on the host backend (null)
  // The CUDA device's own facts; left out of the block when absent.
  std::optional<int> index, multiprocessors, clock_mhz, copy_engines;
  std::optional<std::string> compute_capability, pci_bus_id;
  std::optional<bool> virtual_memory, async_alloc, host_register;
  std::optional<std::uint64_t> vm_granularity_bytes;
};

/// Which implementation a backend is: what a run records as its `backend`, and what decides
/// which collective transport its devices use. Code asks emulated() or a capability rather than
/// comparing kinds wherever it can.
enum class platform_kind { host, cuda };
/// "host" or "cuda": the name a result records.
[[nodiscard]] std::string_view to_string(platform_kind k) noexcept;
/// The kind a result names (`backend`); nothing for a name pinbench has no backend of.
[[nodiscard]] std::optional<platform_kind> parse_platform_kind(std::string_view name) noexcept;

class backend {
 public:
  virtual ~backend() = default;
  backend() = default;
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;

  [[nodiscard]] virtual platform_kind kind() const noexcept = 0;
  /// "cuda" or "host" (to_string(kind())): for results and messages, never for decisions.
  [[nodiscard]] std::string_view name() const noexcept { return to_string(kind()); }
  /// True when the device is emulated in host memory: its figures are host figures, not GPU
  /// figures, and what it can hold is bounded by the host's memory and cores.
  [[nodiscard]] bool emulated() const noexcept { return kind() == platform_kind::host; }

  /// What the result's `environment.device` block says of the device (run/environment.cpp).
  [[nodiscard]] virtual description describe() const = 0;

  /// The ceiling of the device's host link for a copy, per direction (device/pci_link.hpp):
  /// CUDA: the PCIe link in sysfs, or none with the reason; host: measure_host_memcpy.
  [[nodiscard]] virtual link_ceiling host_link() const = 0;

  /// Warnings collected so far (e.g. "mlock failed, pinned memory is not locked"), each once.
  [[nodiscard]] virtual std::vector<std::string> warnings() const = 0;

  // ---- memory -----------------------------------------------------------------------------
  /// Throws out_of_memory when the device (or the host backend's capacity) cannot satisfy it.
  [[nodiscard]] virtual std::unique_ptr<device_buffer> alloc_device(std::size_t bytes) = 0;

  /// Raw device allocation for allocators built on top (cudaMalloc / cudaFree semantics:
  /// free synchronises the device). Throws out_of_memory.
  [[nodiscard]] virtual void* device_malloc(std::size_t bytes) = 0;
  virtual void device_free(void* ptr) = 0;
  [[nodiscard]] virtual memory_info device_memory() const = 0;

  /// Throws pinned_memory_error when pinned memory cannot be had at all (CUDA), or falls back
  /// to unlocked memory with a warning (host backend, mlock refused).
  [[nodiscard]] virtual std::unique_ptr<host_buffer> alloc_host(std::size_t bytes,
                                                                host_kind kind) = 0;

  /// Pins an existing pageable range for the duration of a copy (cudaHostRegister) and unpins it.
  virtual void register_host(void* ptr, std::size_t bytes) = 0;
  virtual void unregister_host(void* ptr) = 0;

  // ---- streams and events -----------------------------------------------------------------
  [[nodiscard]] virtual std::unique_ptr<stream> create_stream() = 0;
  [[nodiscard]] virtual std::unique_ptr<event> create_event() = 0;

  /// cudaMemcpyAsync semantics. From pinned memory it only enqueues. From pageable memory an
  /// H2D copy returns once the source was staged through a bounce buffer by the calling thread,
  /// and a D2H copy returns once the data arrived: `non_blocking` then still holds the caller.
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, copy_dir dir,
                          stream& s) = 0;

  /// Enqueues `duration_ns` of busy device work (a calibrated kernel / a spinning engine thread).
  virtual void launch_compute(stream& s, std::int64_t duration_ns) = 0;

  /// Enqueues a gate: the stream executes nothing after it until the gate is released (or its
  /// timeout passed). Queue at most max_copies_behind_gate copies behind it.
  [[nodiscard]] virtual std::unique_ptr<gate> launch_gate(stream& s) = 0;

  /// Whether cudaHostRegister can work on this device (cudaDevAttrHostRegisterSupported); a
  /// sandboxed or virtualised machine may say no. The reason when not, "" when it can.
  [[nodiscard]] virtual std::string host_register_unsupported() const { return {}; }

  virtual void record(event& e, stream& s) = 0;
  virtual void wait(stream& s, event& e) = 0;  ///< `s` waits for `e` (cudaStreamWaitEvent)
  virtual void synchronize(event& e) = 0;
  [[nodiscard]] virtual bool query(event& e) = 0;  ///< true when completed
  virtual void synchronize(stream& s) = 0;
  virtual void synchronize() = 0;  ///< the whole device
  /// Device time between two completed events, in nanoseconds.
  [[nodiscard]] virtual double elapsed_ns(event& start, event& end) = 0;

  // ---- virtual memory (expandable segments) -----------------------------------------------
  // Optional: the defaults say "unsupported" (supports_virtual_memory() false, the others throw
  // device_error). CUDA: cuMemAddressReserve / cuMemCreate + cuMemMap through the driver API.
  [[nodiscard]] virtual bool supports_virtual_memory() const noexcept { return false; }
  /// The size and alignment unit of map_physical (CUDA: the minimum allocation granularity).
  [[nodiscard]] virtual std::size_t physical_granularity() const;
  /// Reserves `bytes` of device address space, nothing behind it. Throws device_error.
  [[nodiscard]] virtual void* reserve_virtual(std::size_t bytes);
  virtual void release_virtual(void* ptr, std::size_t bytes);
  /// Backs [ptr, ptr + bytes) with new physical memory, readable and writable by the device;
  /// false when the device is out of memory. `bytes` is a multiple of physical_granularity().
  [[nodiscard]] virtual bool map_physical(void* ptr, std::size_t bytes);
  /// Unmaps and frees what one map_physical call with the same ptr and bytes mapped.
  virtual void unmap_physical(void* ptr, std::size_t bytes);

  // ---- stream-ordered allocation (cudaMallocAsync) ----------------------------------------
  // Optional as well: the defaults say "unsupported". CUDA: the device's default memory pool,
  // with a release threshold of UINT64_MAX so that freed memory stays in the pool.
  [[nodiscard]] virtual bool supports_async_alloc() const noexcept { return false; }
  /// nullptr when the device is out of memory; other failures throw device_error.
  [[nodiscard]] virtual void* malloc_async(std::size_t bytes, stream& s);
  virtual void free_async(void* ptr, stream& s);
  [[nodiscard]] virtual async_pool_usage async_pool() const;
  /// Resets the pool's high-water marks to the current values.
  virtual void reset_async_pool_peaks();
  /// Returns pool memory beyond `keep_bytes` to the device (cudaMemPoolTrimTo); call it after
  /// synchronising, the pool only releases memory whose frees completed.
  virtual void trim_async_pool(std::size_t keep_bytes);
};

/// Whether the CUDA backend can be used here, and why not.
struct availability {
  bool usable = false;
  std::string reason;    ///< "built without CUDA", "no CUDA driver (error 35: ...)", "no device"
  int device_count = 0;  ///< CUDA devices this process sees, when usable
};
[[nodiscard]] availability cuda_availability();

struct backend_options {
  /// Host backend: the emulated device memory capacity; 0 = half of physical host memory.
  std::size_t host_device_capacity = 0;
  /// Host backend fault switch: refuse every pinned allocation (tests of the fallback path).
  bool host_refuse_pinning = false;
  /// Host backend fault switch: the first N gates time out at once, as an unreleased CUDA gate
  /// kernel would (tests of the void-sample path; `run --host-fault gate-timeouts=N`).
  std::size_t host_gate_timeouts = 0;
  /// Host backend fault switch: report cudaHostRegister as unsupported, as a sandboxed GPU
  /// machine may (`run --host-fault no-host-register`): `registered` cases are skipped.
  bool host_no_register = false;
  /// Host backend fault switch: every copy and compute takes this fraction longer (0.2 = 20%),
  /// a known slowdown for testing a performance gate (`run --host-fault slow=20%`).
  double host_slowdown = 0;
  int cuda_device = 0;
};

/// The host backend emulates at most this many devices in one process (kinds that drive several
/// devices open one host backend per device).
inline constexpr int max_emulated_devices = 16;

}  // namespace pinbench::device
