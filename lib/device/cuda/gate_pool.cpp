#include "device/cuda/gate_pool.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "device/cuda/check.hpp"
#include "device/cuda/kernels.hpp"

namespace pinbench::device::cuda {

namespace {

std::uint32_t load(std::uint32_t& word) noexcept {
  return std::atomic_ref<std::uint32_t>(word).load(std::memory_order_acquire);
}
void store(std::uint32_t& word, std::uint32_t value) noexcept {
  std::atomic_ref<std::uint32_t>(word).store(value, std::memory_order_release);
}

}  // namespace

gate_pool::gate_pool(int device) : device_index_(device) {
  const std::size_t pool_bytes = slot_count * words_per_slot * sizeof(std::uint32_t);
  void* host = nullptr;
  const cudaError_t status = cudaHostAlloc(&host, pool_bytes, cudaHostAllocMapped);
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw pinned_memory_error("cudaHostAlloc of " + std::to_string(pool_bytes) +
                              " bytes for the gate flags failed: " + describe_error(status));
  }
  host_ = static_cast<std::uint32_t*>(host);
  for (std::size_t i = 0; i < slot_count * words_per_slot; ++i) host_[i] = 0;
  void* mapped = nullptr;
  const cudaError_t map_status = cudaHostGetDevicePointer(&mapped, host, 0);
  if (map_status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    // Under unified addressing (every 64-bit process) all cudaHostAlloc'd memory is mapped and
    // the device reaches it at the host address, whatever the context's flags.
    int unified = 0;
    if (cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device_index_) ==
            cudaSuccess &&
        unified != 0) {
      mapped = host;
    } else {
      static_cast<void>(cudaGetLastError());
      PINBENCH_CUDA_CHECK_NOTHROW(cudaFreeHost(host));
      host_ = nullptr;
      throw_error(map_status, __FILE__, __LINE__, "cudaHostGetDevicePointer(&mapped, host, 0)");
    }
  }
  mapped_ = static_cast<std::uint32_t*>(mapped);
}

gate_pool::~gate_pool() {
  if (host_ == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < slot_count; ++i) store(host_words(i)[0], 1);
  }
  // Every gate is released now, so this returns once the last gate kernel has stopped reading
  // the flags. On a failed (sticky-error) context it returns at once: nothing runs there again.
  int current = -1;
  if (PINBENCH_CUDA_CHECK_NOTHROW(cudaGetDevice(&current)) && current != device_index_)
    PINBENCH_CUDA_CHECK_NOTHROW(cudaSetDevice(device_index_));
  PINBENCH_CUDA_CHECK_NOTHROW(cudaDeviceSynchronize());
  PINBENCH_CUDA_CHECK_NOTHROW(cudaFreeHost(host_));
}

std::size_t gate_pool::count_timeouts_locked() noexcept {
  // A timed-out slot's kernel has exited, so its state word is the host's to rewrite; marking
  // it released makes each timeout count once.
  for (std::size_t i = 0; i < slot_count; ++i) {
    if (held_[i]) continue;
    std::uint32_t& state = host_words(i)[1];
    if (load(state) == gate_timed_out) {
      if (!discarded_[i]) ++timeouts_;
      store(state, gate_released);
    }
    discarded_[i] = false;
  }
  const std::size_t n = timeouts_;
  timeouts_ = 0;
  return n;
}

gate_pool::slot gate_pool::acquire() {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::nanoseconds(kernel_timeout_ns) + std::chrono::seconds(1);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      for (std::size_t k = 0; k < slot_count; ++k) {
        const std::size_t i = (next_ + k) % slot_count;
        std::uint32_t* words = host_words(i);
        if (held_[i]) continue;
        const std::uint32_t state = load(words[1]);
        if (state == gate_armed) continue;  // its kernel has not exited yet
        if (state == gate_timed_out && !discarded_[i]) ++timeouts_;
        discarded_[i] = false;
        store(words[0], 0);
        store(words[1], gate_armed);
        held_[i] = true;
        next_ = (i + 1) % slot_count;
        return {i, mapped_ + i * words_per_slot};
      }
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw device_error("cuda backend: all " + std::to_string(slot_count) +
                         " gates are in use or still running");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void gate_pool::release(std::size_t index) noexcept {
  store(host_words(index)[0], 1);
}

bool gate_pool::timed_out(std::size_t index) const noexcept {
  return load(host_words(index)[1]) == gate_timed_out;
}

void gate_pool::discard_timing(std::size_t index) noexcept {
  std::lock_guard lock(mutex_);
  discarded_[index] = true;
}

void gate_pool::give_back(std::size_t index) noexcept {
  std::lock_guard lock(mutex_);
  held_[index] = false;
}

void gate_pool::abandon(std::size_t index) noexcept {
  std::lock_guard lock(mutex_);
  store(host_words(index)[1], 0);
  held_[index] = false;
}

std::size_t gate_pool::take_timeouts() noexcept {
  std::lock_guard lock(mutex_);
  return count_timeouts_locked();
}

}  // namespace pinbench::device::cuda
