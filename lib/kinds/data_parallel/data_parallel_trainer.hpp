// One training step of a data-parallel model, measured: how the batch and the work split over
// the devices, the step itself (DataParallel's or DistributedDataParallel's), and a check that
// the data came out right. dp_trainer.cpp and ddp_trainer.cpp hold the two steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/backend.hpp"
#include "kinds/data_parallel/data_parallel_devices.hpp"
#include "kinds/data_parallel/data_parallel_params.hpp"

namespace pinbench::kinds::data_parallel {

/// How one step's batch and work split over the devices.
struct layout {
  int devices = 0;
  std::vector<int> shard;                             ///< samples per device
  std::vector<std::uint64_t> first_sample;            ///< of each device's shard within the batch
  std::vector<std::int64_t> forward_ns, backward_ns;  ///< device work per step, per device
  /// The gradient buckets, in bytes, in the order backward makes them ready: bucket_bytes
  /// each, the last one the remainder.
  std::vector<std::uint64_t> buckets;
};

/// The batch split as evenly as whole samples allow (the first batch_size % devices devices get
/// one more, as DistributedSampler's equal shares and torch.chunk's near-equal ones); each
/// device's share of compute_per_batch in proportion to its samples, a third of it forward and
/// two thirds backward (backward costs about twice the forward).
[[nodiscard]] layout make_layout(const data_parallel_params& p, int devices);

/// One step's times (host clock, ns).
struct step_times {
  double step_ns = 0;
  double comm_ns = 0;  ///< dp: scatter, replicate, gather and reduce copies; ddp: all-reduces
  double exposed_comm_ns = 0;  ///< of comm_ns, what no device work hid
};

/// What device 0 holds, by role, in bytes (the parts of its peak).
using holdings = std::vector<std::pair<std::string, std::uint64_t>>;

class trainer {
 public:
  virtual ~trainer() = default;
  /// One step: the batch in, forward, backward, the gradients combined. Returns when all of it
  /// completed; every device's per-step memory is given back by then.
  virtual step_times step() = 0;
  /// One step with known values in the parameters and gradients, the results read back: "" when
  /// they came out right, else what was wrong.
  [[nodiscard]] virtual std::string verify() = 0;
  [[nodiscard]] virtual holdings device0_holdings() const = 0;
  /// How the gradients are combined here, for the result ("host ring, 2 threads", ...).
  [[nodiscard]] virtual std::string comm_path() const = 0;
  /// Facts worth keeping that the step could not do in full here ("" = none).
  [[nodiscard]] virtual std::string limitation() const { return {}; }
  [[nodiscard]] virtual device_set& devices() = 0;
};

[[nodiscard]] std::unique_ptr<trainer> make_dp_trainer(const data_parallel_params& p,
                                                       device_set devices);
[[nodiscard]] std::unique_ptr<trainer> make_ddp_trainer(const data_parallel_params& p,
                                                        device_set devices);

// ---- shared by both steps ---------------------------------------------------------------------

/// The host batch, one buffer per device's shard, each from that device's own backend (so that a
/// pinned shard counts as pinned for the device that copies it), pinned or pageable as the case
/// says. Its bytes are a harmless float pattern (0.75-ish, never a NaN or a denormal that would
/// slow the sums of memory that reuses them).
[[nodiscard]] std::vector<std::unique_ptr<device::host_buffer>> make_host_batch(
    const data_parallel_params& p, const layout& l, device_set& devices);

/// Known values: gradient element i on device k, their sum over `devices` devices, and
/// parameter element i.
[[nodiscard]] float gradient_value(int device, std::size_t i) noexcept;
[[nodiscard]] float gradient_sum(int devices, std::size_t i) noexcept;
[[nodiscard]] float parameter_value(std::size_t i) noexcept;

/// Device or host memory the host can address (host buffers; the host backend's device
/// memory), as the float32 elements it holds.
[[nodiscard]] inline float* as_floats(std::byte* p) noexcept {
  return static_cast<float*>(static_cast<void*>(p));
}

/// One pinned buffer of `bytes` per device, from its own backend: what verification writes
/// known values through and reads results back through.
[[nodiscard]] std::vector<std::unique_ptr<device::host_buffer>> make_staging(device_set& devices,
                                                                             std::size_t bytes);
/// Writes `fn(i)` into every float element of [dst, dst + bytes) on `d` (through `staging`, on
/// d's stream), and waits for it.
void upload(device_slot& d, device::host_buffer& staging, std::byte* dst, std::size_t bytes,
            const std::function<float(std::size_t)>& fn);
/// Reads [src, src + bytes) back from `d` through `staging`: "" when element i is expected(i)
/// for every i, else the first difference, naming `what`.
[[nodiscard]] std::string check(device_slot& d, device::host_buffer& staging, const std::byte* src,
                                std::size_t bytes, const std::string& what,
                                const std::function<float(std::size_t)>& expected);

}  // namespace pinbench::kinds::data_parallel
