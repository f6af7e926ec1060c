// The driver's virtual memory API through runtime-provided entry points. cuda.h is included for
// its types and enums only: every function is called through a pointer the runtime looked up.
#include "device/cuda/virtual_memory.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "device/cuda/check.hpp"

namespace pinbench::device::cuda {

struct virtual_memory::api {
  // Signatures as in cuda.h; CUDAAPI is the calling convention of the driver API.
  CUresult(CUDAAPI* address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                                     unsigned long long) = nullptr;
  CUresult(CUDAAPI* address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult(CUDAAPI* create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                            unsigned long long) = nullptr;
  CUresult(CUDAAPI* release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult(CUDAAPI* map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                         unsigned long long) = nullptr;
  CUresult(CUDAAPI* unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult(CUDAAPI* set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult(CUDAAPI* granularity)(size_t*, const CUmemAllocationProp*,
                                 CUmemAllocationGranularity_flags) = nullptr;
  CUresult(CUDAAPI* error_name)(CUresult, const char**) = nullptr;  // optional
  CUmemAllocationProp prop{};
  CUmemAccessDesc access{};
};

namespace {

// Every entry point used here exists, unchanged, since CUDA 10.2; 12.0 is the oldest ABI
// version that the CUDA 12/13 runtimes resolve by version.
constexpr unsigned int entry_point_version = 12000;

template <class Fn>
bool load(const char* symbol, Fn*& fn, std::string& reason) noexcept {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(symbol, &p, entry_point_version, cudaEnableDefault, &found);
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
    if (status != cudaSuccess) static_cast<void>(cudaGetLastError());
    reason = std::string("the driver has no ") + symbol +
             (status != cudaSuccess ? " (" + describe_error(status) + ")" : std::string());
    return false;
  }
  fn = reinterpret_cast<Fn*>(p);
  return true;
}

std::string driver_error(const virtual_memory::api& a, CUresult r) {
  const char* name = nullptr;
  if (a.error_name != nullptr && a.error_name(r, &name) == CUDA_SUCCESS && name != nullptr)
    return std::string(name);
  return "CUresult " + std::to_string(static_cast<int>(r));
}

[[noreturn]] void fail(const virtual_memory::api& a, CUresult r, std::string_view call) {
  throw device_error(std::string(call) + " failed: " + driver_error(a, r));
}

CUdeviceptr as_deviceptr(void* p) noexcept {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

std::uintptr_t as_key(void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

virtual_memory::virtual_memory(int device) noexcept : device_(device) {
  try {
    auto a = std::make_unique<api>();
    if (!load("cuMemAddressReserve", a->address_reserve, reason_) ||
        !load("cuMemAddressFree", a->address_free, reason_) ||
        !load("cuMemCreate", a->create, reason_) || !load("cuMemRelease", a->release, reason_) ||
        !load("cuMemMap", a->map, reason_) || !load("cuMemUnmap", a->unmap, reason_) ||
        !load("cuMemSetAccess", a->set_access, reason_) ||
        !load("cuMemGetAllocationGranularity", a->granularity, reason_))
      return;
    std::string ignored;
    if (!load("cuGetErrorName", a->error_name, ignored)) a->error_name = nullptr;
    CUresult(CUDAAPI * device_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
    if (!load("cuDeviceGetAttribute", device_attribute, reason_)) return;
    int supported = 0;
    const CUresult q = device_attribute(
        &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device_);
    if (q != CUDA_SUCCESS) {
      reason_ = "cannot query virtual memory support: " + driver_error(*a, q);
      return;
    }
    if (supported == 0) {
      reason_ = "the device does not support virtual memory management";
      return;
    }

    a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a->prop.location.id = device_;
    a->access.location = a->prop.location;
    a->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    size_t granularity = 0;
    const CUresult r = a->granularity(&granularity, &a->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS || granularity == 0) {
      reason_ = "cuMemGetAllocationGranularity failed: " + driver_error(*a, r);
      return;
    }
    granularity_ = granularity;
    api_ = std::move(a);
  } catch (const std::exception& e) {
    api_.reset();
    reason_ = std::string("loading the virtual memory API failed: ") + e.what();
  }
}

virtual_memory::~virtual_memory() {
  if (api_ == nullptr) return;
  const api& a = *api_;
  for (const auto& [address, c] : mapped_) {
    const auto ptr = static_cast<CUdeviceptr>(address);
    static_cast<void>(a.unmap(ptr, c.bytes));
    static_cast<void>(a.release(c.handle));
  }
  for (const auto& [address, bytes] : reserved_)
    static_cast<void>(a.address_free(static_cast<CUdeviceptr>(address), bytes));
}

void* virtual_memory::reserve(std::size_t bytes) {
  if (api_ == nullptr) throw device_error("virtual memory is not usable: " + reason_);
  const api& a = *api_;
  CUdeviceptr ptr = 0;
  const CUresult r = a.address_reserve(&ptr, bytes, granularity_, 0, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw out_of_memory("cuMemAddressReserve of " + std::to_string(bytes) +
                        " bytes failed: " + driver_error(a, r));
  if (r != CUDA_SUCCESS) fail(a, r, "cuMemAddressReserve");
  void* const p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
  try {
    std::lock_guard lock(mutex_);
    reserved_.emplace(as_key(p), bytes);
  } catch (...) {
    static_cast<void>(a.address_free(ptr, bytes));
    throw;
  }
  return p;
}

void virtual_memory::release(void* ptr, std::size_t bytes) {
  if (ptr == nullptr) return;
  if (api_ == nullptr) throw device_error("virtual memory is not usable: " + reason_);
  const api& a = *api_;
  {
    std::lock_guard lock(mutex_);
    reserved_.erase(as_key(ptr));
  }
  const CUresult r = a.address_free(as_deviceptr(ptr), bytes);
  if (r != CUDA_SUCCESS) fail(a, r, "cuMemAddressFree");
}

bool virtual_memory::map(void* ptr, std::size_t bytes) {
  if (api_ == nullptr) throw device_error("virtual memory is not usable: " + reason_);
  const api& a = *api_;
  if (bytes == 0 || bytes % granularity_ != 0)
    throw device_error("map of " + std::to_string(bytes) +
                       " bytes is not a multiple of the granularity " +
                       std::to_string(granularity_));
  CUmemGenericAllocationHandle handle = 0;
  CUresult r = a.create(&handle, bytes, &a.prop, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
  if (r != CUDA_SUCCESS) fail(a, r, "cuMemCreate");
  const CUdeviceptr address = as_deviceptr(ptr);
  r = a.map(address, bytes, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    static_cast<void>(a.release(handle));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    fail(a, r, "cuMemMap");
  }
  r = a.set_access(address, bytes, &a.access, 1);
  if (r != CUDA_SUCCESS) {
    static_cast<void>(a.unmap(address, bytes));
    static_cast<void>(a.release(handle));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    fail(a, r, "cuMemSetAccess");
  }
  try {
    std::lock_guard lock(mutex_);
    mapped_.insert_or_assign(as_key(ptr), chunk{handle, bytes});
  } catch (...) {
    static_cast<void>(a.unmap(address, bytes));
    static_cast<void>(a.release(handle));
    throw;
  }
  return true;
}

void virtual_memory::unmap(void* ptr, std::size_t bytes) {
  if (api_ == nullptr) throw device_error("virtual memory is not usable: " + reason_);
  const api& a = *api_;
  chunk c{};
  {
    std::lock_guard lock(mutex_);
    const auto it = mapped_.find(as_key(ptr));
    if (it == mapped_.end())
      throw device_error("unmap of an address that map_physical did not map");
    if (it->second.bytes != bytes)
      throw device_error("unmap of " + std::to_string(bytes) + " bytes where " +
                         std::to_string(it->second.bytes) + " were mapped");
    c = it->second;
    mapped_.erase(it);
  }
  // The caller has synchronised (as before cudaFree); the physical memory goes with the handle.
  CUresult r = a.unmap(as_deviceptr(ptr), c.bytes);
  const CUresult released = a.release(c.handle);
  if (r != CUDA_SUCCESS) fail(a, r, "cuMemUnmap");
  if (released != CUDA_SUCCESS) fail(a, released, "cuMemRelease");
}

}  // namespace pinbench::device::cuda
