// Helpers shared by the loader tests: a host backend, small datasets and loader specs, the pool
// for a pin mode, and a watchdog for destructors. Also built into pinbench_loader_tsan, so it may
// use only lib/core, lib/device (host) and lib/loader.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>

#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "loader/pinned_pool.hpp"

namespace pinbench::loader::testing {

inline std::unique_ptr<device::backend> host_backend(std::size_t capacity_bytes = 256_MiB,
                                                     bool refuse_pinning = false) {
  device::backend_options options;
  options.host_device_capacity = capacity_bytes;
  options.host_refuse_pinning = refuse_pinning;
  return device::platform::host(options).open(0);
}

inline dataset_spec small_spec(std::uint64_t samples, std::size_t sample_bytes,
                               std::int64_t cpu_per_sample_ns = 0) {
  dataset_spec spec;
  spec.samples = samples;
  spec.sample_bytes = sample_bytes;
  spec.cpu_per_sample_ns = cpu_per_sample_ns;
  return spec;
}

enum class pinning { off, per_batch, ring };

inline std::string_view to_string(pinning p) {
  switch (p) {
    case pinning::off:
      return "off";
    case pinning::per_batch:
      return "per_batch";
    case pinning::ring:
      return "ring";
  }
  return "?";
}

/// The seed only matters with shuffle; a fixed one keeps shuffled runs reproducible.
inline loader_spec make_loader_spec(int workers, pinning p, std::size_t batch_size = 16,
                                    bool shuffle = false, bool drop_last = false,
                                    int prefetch_factor = 2) {
  loader_spec spec;
  spec.batch_size = batch_size;
  spec.num_workers = workers;
  spec.prefetch_factor = prefetch_factor;
  spec.pin_memory = p != pinning::off;
  spec.shuffle = shuffle;
  spec.drop_last = drop_last;
  spec.seed = 7;
  return spec;
}

/// The pool for a pin configuration. The ring gets one slot more than the loader may have
/// outstanding: the batch the consumer holds has one too.
inline std::unique_ptr<pinned_pool> make_pool(pinning p, device::backend& dev,
                                              const loader_spec& spec, std::size_t sample_bytes) {
  switch (p) {
    case pinning::off:
      return nullptr;
    case pinning::per_batch:
      return make_caching_host_allocator(dev, 0);
    case pinning::ring:
      return make_pinned_ring(dev, max_outstanding(spec) + 1,
                              batch_bytes(spec.batch_size, sample_bytes), 0);
  }
  return nullptr;
}

/// Runs `fn` on another thread and waits at most 10 s for it; its exception is rethrown here.
/// A thread stuck in a destructor can be neither joined nor abandoned (it uses the caller's
/// objects), so a deadlock ends the test binary with a message instead of hanging it.
template <class F>
void must_finish(const char* what, F fn) {
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::fprintf(stderr, "DEADLOCK: %s did not finish within 10 s\n", what);
    std::fflush(stderr);
    std::abort();
  }
  runner.join();
  done.get();
}

}  // namespace pinbench::loader::testing
