#include "device/cuda/cuda_backend.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "device/cuda/check.hpp"
#include "device/cuda/cuda_facts.hpp"
#include "device/cuda/gate_pool.hpp"
#include "device/cuda/kernels.hpp"
#include "device/cuda/virtual_memory.hpp"
#include "device/telemetry/telemetry.hpp"

namespace pinbench::device {

namespace {

using cuda::gate_pool;

// The current device is per host thread, and the loader drives the backend from several
// threads: every call that depends on it (allocations, stream and event creation, launches,
// device-wide queries) selects the backend's device first. Cheap when it is already current.
void use_device(int device) {
  int current = -1;
  PINBENCH_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) PINBENCH_CUDA_CHECK(cudaSetDevice(device));
}

bool use_device_nothrow(int device) noexcept {
  int current = -1;
  if (!PINBENCH_CUDA_CHECK_NOTHROW(cudaGetDevice(&current))) return false;
  return current == device || PINBENCH_CUDA_CHECK_NOTHROW(cudaSetDevice(device));
}

std::string size_text(std::size_t bytes) {
  return format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

std::size_t page_bytes() noexcept {
  static const std::size_t page = [] {
    const long v = ::sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{4096};
  }();
  return page;
}

std::size_t round_up_to_page(std::size_t bytes) {
  const std::size_t page = page_bytes();
  if (bytes > SIZE_MAX - page)
    throw out_of_memory("host allocation of " + size_text(bytes) + " is too large");
  return (bytes + page - 1) / page * page;
}

// ---- RAII owners ----------------------------------------------------------------------------

class cuda_stream final : public stream {
 public:
  explicit cuda_stream(int device) {
    use_device(device);
    PINBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  // Work still queued on the stream completes; the runtime frees the stream afterwards.
  ~cuda_stream() override { PINBENCH_CUDA_CHECK_NOTHROW(cudaStreamDestroy(handle_)); }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  [[nodiscard]] cudaStream_t handle() const noexcept { return handle_; }

 private:
  cudaStream_t handle_ = nullptr;
};

class cuda_event final : public event {
 public:
  explicit cuda_event(int device) {
    use_device(device);
    PINBENCH_CUDA_CHECK(cudaEventCreate(&handle_));  // timing enabled
  }
  ~cuda_event() override { PINBENCH_CUDA_CHECK_NOTHROW(cudaEventDestroy(handle_)); }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  [[nodiscard]] cudaEvent_t handle() const noexcept { return handle_; }

 private:
  cudaEvent_t handle_ = nullptr;
};

class cuda_device_buffer final : public device_buffer {
 public:
  cuda_device_buffer(int device, void* ptr, std::size_t bytes) noexcept
      : device_(device), ptr_(ptr), bytes_(bytes) {}
  ~cuda_device_buffer() override {
    if (ptr_ != nullptr && use_device_nothrow(device_)) PINBENCH_CUDA_CHECK_NOTHROW(cudaFree(ptr_));
  }
  cuda_device_buffer(const cuda_device_buffer&) = delete;
  cuda_device_buffer& operator=(const cuda_device_buffer&) = delete;
  [[nodiscard]] std::byte* data() noexcept override { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::size_t bytes() const noexcept override { return bytes_; }

 private:
  int device_;
  void* ptr_;
  std::size_t bytes_;
};

/// Page-aligned malloc'd memory with every page touched, optionally cudaHostRegister'ed.
class malloc_host_buffer final : public host_buffer {
 public:
  malloc_host_buffer(int device, std::size_t bytes, host_kind kind)
      : device_(device), bytes_(bytes), kind_(kind) {
    if (bytes == 0) return;
    const std::size_t page = page_bytes();
    const std::size_t rounded = round_up_to_page(bytes);
    ptr_ = static_cast<std::byte*>(std::aligned_alloc(page, rounded));
    if (ptr_ == nullptr)
      throw out_of_memory("pageable host allocation of " + size_text(bytes) + " failed");
    // Fault every page in now, so that first-touch page faults never land in a timed copy.
    for (std::size_t offset = 0; offset < rounded; offset += page) ptr_[offset] = std::byte{0};
    if (kind_ != host_kind::registered) return;
    cudaError_t status = cudaSuccess;
    try {
      use_device(device_);
      status = cudaHostRegister(ptr_, rounded, cudaHostRegisterDefault);
    } catch (...) {
      std::free(ptr_);
      throw;
    }
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      std::free(ptr_);
      throw pinned_memory_error("cudaHostRegister of " + size_text(bytes) +
                                " failed: " + cuda::describe_error(status));
    }
  }
  ~malloc_host_buffer() override {
    if (ptr_ == nullptr) return;
    if (kind_ == host_kind::registered && use_device_nothrow(device_))
      PINBENCH_CUDA_CHECK_NOTHROW(cudaHostUnregister(ptr_));
    std::free(ptr_);
  }
  malloc_host_buffer(const malloc_host_buffer&) = delete;
  malloc_host_buffer& operator=(const malloc_host_buffer&) = delete;
  [[nodiscard]] std::byte* data() noexcept override { return ptr_; }
  [[nodiscard]] std::size_t bytes() const noexcept override { return bytes_; }
  [[nodiscard]] host_kind kind() const noexcept override { return kind_; }
  [[nodiscard]] bool page_locked() const noexcept override {
    return kind_ == host_kind::registered;
  }

 private:
  int device_;
  std::byte* ptr_ = nullptr;
  std::size_t bytes_;
  host_kind kind_;
};

/// cudaHostAlloc'd memory (plain or write-combined).
class pinned_host_buffer final : public host_buffer {
 public:
  pinned_host_buffer(int device, std::size_t bytes, host_kind kind)
      : device_(device), bytes_(bytes), kind_(kind) {
    if (bytes == 0) return;
    use_device(device_);
    const unsigned int flags =
        kind == host_kind::pinned_wc ? cudaHostAllocWriteCombined : cudaHostAllocDefault;
    void* ptr = nullptr;
    const cudaError_t status = cudaHostAlloc(&ptr, bytes, flags);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      throw pinned_memory_error(
          std::string(kind == host_kind::pinned_wc ? "cudaHostAlloc(cudaHostAllocWriteCombined)"
                                                   : "cudaHostAlloc") +
          " of " + size_text(bytes) + " failed: " + cuda::describe_error(status));
    }
    ptr_ = static_cast<std::byte*>(ptr);
  }
  ~pinned_host_buffer() override {
    if (ptr_ != nullptr && use_device_nothrow(device_))
      PINBENCH_CUDA_CHECK_NOTHROW(cudaFreeHost(ptr_));
  }
  pinned_host_buffer(const pinned_host_buffer&) = delete;
  pinned_host_buffer& operator=(const pinned_host_buffer&) = delete;
  [[nodiscard]] std::byte* data() noexcept override { return ptr_; }
  [[nodiscard]] std::size_t bytes() const noexcept override { return bytes_; }
  [[nodiscard]] host_kind kind() const noexcept override { return kind_; }
  [[nodiscard]] bool page_locked() const noexcept override { return true; }

 private:
  int device_;
  std::byte* ptr_ = nullptr;
  std::size_t bytes_;
  host_kind kind_;
};

class cuda_gate final : public gate {
 public:
  cuda_gate(std::shared_ptr<gate_pool> pool, std::size_t index) noexcept
      : pool_(std::move(pool)), index_(index) {}
  ~cuda_gate() override {
    if (pool_ == nullptr) return;
    pool_->release(index_);
    pool_->give_back(index_);
  }
  cuda_gate(const cuda_gate&) = delete;
  cuda_gate& operator=(const cuda_gate&) = delete;
  void release() noexcept override {
    if (pool_ != nullptr) pool_->release(index_);
  }
  [[nodiscard]] bool timed_out() const noexcept override {
    return pool_ != nullptr && pool_->timed_out(index_);
  }
  void discard_timing() noexcept override {
    if (pool_ != nullptr) pool_->discard_timing(index_);
  }
  /// The kernel was never launched.
  void abandon() noexcept {
    pool_->abandon(index_);
    pool_.reset();
  }

 private:
  std::shared_ptr<gate_pool> pool_;  // shared: the flags outlive the backend while a gate lives
  std::size_t index_;
};

template <class Derived, class Base>
Derived& own(Base& object, const char* what) {
  auto* p = dynamic_cast<Derived*>(&object);
  if (p == nullptr)
    throw device_error(std::string("cuda backend: ") + what + " was not made by the cuda backend");
  return *p;
}

cudaMemcpyKind memcpy_kind(copy_dir dir) {
  switch (dir) {
    case copy_dir::h2d:
      return cudaMemcpyHostToDevice;
    case copy_dir::d2h:
      return cudaMemcpyDeviceToHost;
    case copy_dir::d2d:
      return cudaMemcpyDeviceToDevice;
  }
  throw device_error("cuda backend: unknown copy direction");
}

// ---- the backend ----------------------------------------------------------------------------

class cuda_backend final : public backend {
 public:
  explicit cuda_backend(int device) : device_(device) {
    PINBENCH_CUDA_CHECK(cudaSetDevice(device_));  // creates the primary context
    cudaDeviceProp prop{};
    PINBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    if (prop.canMapHostMemory == 0)
      throw device_error("the device cannot map host memory, which gates need");
    int driver = 0, runtime = 0, clock_khz = 0;
    PINBENCH_CUDA_CHECK(cudaDriverGetVersion(&driver));
    PINBENCH_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute remains.
    PINBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_));
    std::array<char, 32> bus_id{};
    PINBENCH_CUDA_CHECK(
        cudaDeviceGetPCIBusId(bus_id.data(), static_cast<int>(bus_id.size()), device_));
    bus_id_ = bus_id.data();
    std::array<unsigned char, 16> uuid{};
    std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());

    prop.name[sizeof prop.name - 1] = '\0';
    description_.name = std::string(prop.name);
    description_.uuid = cuda::format_gpu_uuid(uuid);
    description_.index = device_;
    description_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    description_.driver = cuda::format_cuda_version(driver);
    description_.runtime = cuda::format_cuda_version(runtime);
    description_.memory_bytes = prop.totalGlobalMem;
    description_.multiprocessors = prop.multiProcessorCount;
    description_.clock_mhz = clock_khz / 1000;
    description_.copy_engines = prop.asyncEngineCount;
    description_.pci_bus_id = bus_id_;
    // Both kernels loaded now, before any gate spins (kernels.hpp: lazy loading would stall).
    PINBENCH_CUDA_CHECK(cuda::load_kernels());
    gates_ = std::make_shared<gate_pool>(device_);
    vm_ = std::make_unique<cuda::virtual_memory>(device_);
    description_.virtual_memory = vm_->usable();
    if (vm_->usable()) description_.vm_granularity_bytes = vm_->granularity();
    setup_async_pool();
    description_.async_alloc = pool_ != nullptr;
    int host_register = 0;
    PINBENCH_CUDA_CHECK(
        cudaDeviceGetAttribute(&host_register, cudaDevAttrHostRegisterSupported, device_));
    host_register_supported_ = host_register != 0;
    description_.host_register = host_register_supported_;
  }

  [[nodiscard]] std::string host_register_unsupported() const override {
    if (host_register_supported_) return {};
    return "cudaDevAttrHostRegisterSupported is 0 on this device: the platform does not let "
           "cudaHostRegister pin existing memory (common on virtualised or sandboxed machines)";
  }

  [[nodiscard]] platform_kind kind() const noexcept override { return platform_kind::cuda; }

  [[nodiscard]] description describe() const override {
    description d = description_;
    // Read now rather than at start: the link trains down when the GPU idles.
    d.pcie = read_pcie_link(bus_id_);
    d.emulated = false;
    return d;
  }

  // Read at each call for the same reason: the ceiling's source names the current link too.
  // sysfs first (it also sees the port above the GPU); NVML only where sysfs has no entry for
  // the device at all (a container without /sys). A device sysfs lists without PCIe link files
  // reaches the host another way (NVLink-C2C), which NVML's PCIe figures would misstate.
  [[nodiscard]] link_ceiling host_link() const override {
    link_ceiling from_sysfs = read_link_ceiling(bus_id_);
    if (from_sysfs.gbps ||
        std::filesystem::exists("/sys/bus/pci/devices/" + sysfs_pci_address(bus_id_)))
      return from_sysfs;
    link_ceiling from_nvml = telemetry::nvml_link_ceiling(bus_id_);
    if (!from_nvml.gbps) from_nvml.reason = from_sysfs.reason + "; " + from_nvml.reason;
    return from_nvml;
  }

  [[nodiscard]] std::vector<std::string> warnings() const override {
    std::lock_guard lock(warnings_mutex_);
    if (gates_->take_timeouts() > 0) add_warning_locked(gate_timeout_warning());
    return warnings_;
  }

  // ---- memory ---------------------------------------------------------------------------
  [[nodiscard]] std::unique_ptr<device_buffer> alloc_device(std::size_t bytes) override {
    void* ptr = device_malloc(bytes);
    try {
      return std::make_unique<cuda_device_buffer>(device_, ptr, bytes);
    } catch (...) {
      device_free(ptr);
      throw;
    }
  }

  [[nodiscard]] void* device_malloc(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    use_device(device_);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
      static_cast<void>(cudaGetLastError());  // see cuda::throw_error
      throw out_of_memory("cudaMalloc of " + size_text(bytes) +
                          " failed: " + cuda::describe_error(status));
    }
    if (status != cudaSuccess)
      cuda::throw_error(status, __FILE__, __LINE__, "cudaMalloc(&ptr, bytes)");
    return ptr;
  }

  void device_free(void* ptr) override {
    if (ptr == nullptr) return;
    use_device(device_);
    PINBENCH_CUDA_CHECK(cudaFree(ptr));
  }

  [[nodiscard]] memory_info device_memory() const override {
    use_device(device_);
    memory_info info;
    PINBENCH_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
    return info;
  }

  [[nodiscard]] std::unique_ptr<host_buffer> alloc_host(std::size_t bytes,
                                                        host_kind kind) override {
    switch (kind) {
      case host_kind::pageable:
      case host_kind::registered:
        return std::make_unique<malloc_host_buffer>(device_, bytes, kind);
      case host_kind::pinned:
      case host_kind::pinned_wc:
        return std::make_unique<pinned_host_buffer>(device_, bytes, kind);
    }
    throw device_error("cuda backend: unknown host memory kind");
  }

  void register_host(void* ptr, std::size_t bytes) override {
    use_device(device_);
    const cudaError_t status = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      throw pinned_memory_error("cudaHostRegister of " + size_text(bytes) +
                                " failed: " + cuda::describe_error(status));
    }
  }

  void unregister_host(void* ptr) override {
    use_device(device_);
    PINBENCH_CUDA_CHECK(cudaHostUnregister(ptr));
  }

  // ---- streams and events ---------------------------------------------------------------
  [[nodiscard]] std::unique_ptr<stream> create_stream() override {
    return std::make_unique<cuda_stream>(device_);
  }
  [[nodiscard]] std::unique_ptr<event> create_event() override {
    return std::make_unique<cuda_event>(device_);
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, copy_dir dir, stream& s) override {
    auto& cs = own<cuda_stream>(s, "the stream");
    if (bytes == 0) return;
    PINBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, memcpy_kind(dir), cs.handle()));
  }

  void launch_compute(stream& s, std::int64_t duration_ns) override {
    auto& cs = own<cuda_stream>(s, "the stream");
    if (duration_ns <= 0) return;
    use_device(device_);
    PINBENCH_CUDA_CHECK(
        cuda::launch_spin_kernel(cs.handle(), static_cast<std::uint64_t>(duration_ns)));
  }

  [[nodiscard]] std::unique_ptr<gate> launch_gate(stream& s) override {
    auto& cs = own<cuda_stream>(s, "the stream");
    use_device(device_);
    const gate_pool::slot slot = gates_->acquire();
    std::unique_ptr<cuda_gate> g;
    try {
      g = std::make_unique<cuda_gate>(gates_, slot.index);
    } catch (...) {
      gates_->abandon(slot.index);
      throw;
    }
    const cudaError_t status =
        cuda::launch_gate_kernel(cs.handle(), slot.device_words, gate_pool::kernel_timeout_ns);
    if (status != cudaSuccess) {
      g->abandon();
      cuda::throw_error(status, __FILE__, __LINE__, "launch_gate_kernel(stream, slot, timeout)");
    }
    return g;
  }

  void record(event& e, stream& s) override {
    PINBENCH_CUDA_CHECK(cudaEventRecord(own<cuda_event>(e, "the event").handle(),
                                        own<cuda_stream>(s, "the stream").handle()));
  }
  void wait(stream& s, event& e) override {
    PINBENCH_CUDA_CHECK(cudaStreamWaitEvent(own<cuda_stream>(s, "the stream").handle(),
                                            own<cuda_event>(e, "the event").handle(), 0));
  }
  void synchronize(event& e) override {
    PINBENCH_CUDA_CHECK(cudaEventSynchronize(own<cuda_event>(e, "the event").handle()));
  }
  [[nodiscard]] bool query(event& e) override {
    const cudaError_t status = cudaEventQuery(own<cuda_event>(e, "the event").handle());
    if (status == cudaErrorNotReady) return false;
    PINBENCH_CUDA_CHECK(status);
    return true;
  }
  void synchronize(stream& s) override {
    PINBENCH_CUDA_CHECK(cudaStreamSynchronize(own<cuda_stream>(s, "the stream").handle()));
  }
  void synchronize() override {
    use_device(device_);
    PINBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  }
  [[nodiscard]] double elapsed_ns(event& start, event& end) override {
    float ms = 0;
    PINBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms,
                                             own<cuda_event>(start, "the start event").handle(),
                                             own<cuda_event>(end, "the end event").handle()));
    return static_cast<double>(ms) * 1e6;
  }

  // ---- virtual memory -------------------------------------------------------------------
  [[nodiscard]] bool supports_virtual_memory() const noexcept override { return vm_->usable(); }
  [[nodiscard]] std::size_t physical_granularity() const override {
    need_vm();
    return vm_->granularity();
  }
  [[nodiscard]] void* reserve_virtual(std::size_t bytes) override {
    need_vm();
    use_device(device_);
    return vm_->reserve(bytes);
  }
  void release_virtual(void* ptr, std::size_t bytes) override {
    need_vm();
    use_device(device_);
    vm_->release(ptr, bytes);
  }
  [[nodiscard]] bool map_physical(void* ptr, std::size_t bytes) override {
    need_vm();
    use_device(device_);
    return vm_->map(ptr, bytes);
  }
  void unmap_physical(void* ptr, std::size_t bytes) override {
    need_vm();
    use_device(device_);
    vm_->unmap(ptr, bytes);
  }

  // ---- stream-ordered allocation --------------------------------------------------------
  [[nodiscard]] bool supports_async_alloc() const noexcept override { return pool_ != nullptr; }

  [[nodiscard]] void* malloc_async(std::size_t bytes, stream& s) override {
    need_pool();
    auto& cs = own<cuda_stream>(s, "the stream");
    if (bytes == 0) return nullptr;
    use_device(device_);
    void* ptr = nullptr;
    const cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, pool_, cs.handle());
    if (status == cudaErrorMemoryAllocation) {
      static_cast<void>(cudaGetLastError());  // not sticky: the next call must not see it
      return nullptr;
    }
    if (status != cudaSuccess)
      cuda::throw_error(status, __FILE__, __LINE__,
                        "cudaMallocFromPoolAsync(&ptr, bytes, pool, stream)");
    return ptr;
  }

  void free_async(void* ptr, stream& s) override {
    need_pool();
    auto& cs = own<cuda_stream>(s, "the stream");
    if (ptr == nullptr) return;
    use_device(device_);
    PINBENCH_CUDA_CHECK(cudaFreeAsync(ptr, cs.handle()));
  }

  [[nodiscard]] async_pool_usage async_pool() const override {
    need_pool();
    async_pool_usage u;
    PINBENCH_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &u.reserved_bytes));
    PINBENCH_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &u.reserved_peak_bytes));
    PINBENCH_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &u.used_bytes));
    PINBENCH_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &u.used_peak_bytes));
    return u;
  }

  void reset_async_pool_peaks() override {
    need_pool();
    // Setting a high-water mark to 0 resets it to the current value.
    std::uint64_t zero = 0;
    PINBENCH_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero));
    zero = 0;
    PINBENCH_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  }

  void trim_async_pool(std::size_t keep_bytes) override {
    need_pool();
    use_device(device_);
    PINBENCH_CUDA_CHECK(cudaMemPoolTrimTo(pool_, keep_bytes));
  }

 private:
  void need_vm() const {
    if (!vm_->usable())
      throw device_error("virtual memory is not usable on this device: " + vm_->reason());
  }
  void need_pool() const {
    if (pool_ == nullptr)
      throw device_error("stream-ordered allocation is not usable on this device: " + pool_reason_);
  }

  // The device's default pool, as PyTorch's cudaMallocAsync backend uses it, keeping freed
  // memory (release threshold UINT64_MAX) instead of returning it at every synchronisation.
  // Leaves pool_ null with a reason when the device or driver cannot.
  void setup_async_pool() noexcept {
    int supported = 0;
    cudaError_t status =
        cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device_);
    if (status == cudaSuccess && supported == 0) {
      pool_reason_ = "the device does not support memory pools";
      return;
    }
    cudaMemPool_t pool = nullptr;
    if (status == cudaSuccess) status = cudaDeviceGetDefaultMemPool(&pool, device_);
    std::uint64_t threshold = UINT64_MAX;
    if (status == cudaSuccess)
      status = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      pool_reason_ = cuda::describe_error(status);
      return;
    }
    pool_ = pool;
  }

  void add_warning_locked(std::string text) const {
    for (const auto& w : warnings_)
      if (w == text) return;
    warnings_.push_back(std::move(text));
  }

  int device_;
  std::string bus_id_;
  description description_;
  std::shared_ptr<gate_pool> gates_;
  bool host_register_supported_ = true;
  std::unique_ptr<cuda::virtual_memory> vm_;
  cudaMemPool_t pool_ = nullptr;  // the device's default pool; not owned
  std::string pool_reason_;
  mutable std::mutex warnings_mutex_;
  mutable std::vector<std::string> warnings_;
};

}  // namespace

availability probe_cuda() {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      const char* name = cudaGetErrorName(status);
      const char* text = cudaGetErrorString(status);
      return {false, std::string(name != nullptr ? name : "cudaError") + ": " +
                         (text != nullptr ? text : "unknown error") +
                         " (no NVIDIA driver or no device visible)"};
    }
    if (count <= 0) return {false, "no CUDA device"};
    return {true, std::to_string(count) + (count == 1 ? " CUDA device" : " CUDA devices"), count};
  } catch (const std::exception& e) {
    return {false, std::string("probing CUDA failed: ") + e.what()};
  }
}

std::unique_ptr<backend> make_cuda_backend(const backend_options& options) {
  const int device = options.cuda_device;
  const availability a = probe_cuda();
  if (!a.usable) throw environment_error("no usable CUDA device: " + a.reason);
  int count = 0;
  PINBENCH_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw environment_error("CUDA device " + std::to_string(device) + " does not exist (" +
                            std::to_string(count) + " visible)");
  try {
    return std::make_unique<cuda_backend>(device);
  } catch (const environment_error&) {
    throw;
  } catch (const error& e) {
    // Whatever stops the device from starting (exclusive mode, a broken driver, no mappable
    // memory) means the environment cannot run the cuda backend: exit 3, not a case failure.
    throw environment_error("CUDA device " + std::to_string(device) +
                            " is not usable: " + e.what());
  }
}

}  // namespace pinbench::device
