// `pinbench tune loader`: the DataLoader settings (num_workers, prefetch_factor, pin_memory,
// pin_mode) that keep the device busy, from the user's own data, found with short measured
// trials of the loader kind and confirmed by a full-length run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "result/result.hpp"
#include "tune/session.hpp"

namespace pinbench::tune {

struct loader_request {
  std::string images;  ///< an ImageFolder, decoded and augmented; "" = synthetic samples
  std::optional<std::int64_t> cpu_per_sample_ns;  ///< synthetic: CPU work per sample
  std::optional<std::uint64_t> sample_bytes;      ///< synthetic: bytes per sample
  std::uint64_t batch_size = 64;
  std::int64_t step_time_ns = 0;  ///< the model's device time per batch
  double target_busy = 0.95;      ///< the gpu_busy fraction to hold
  unsigned max_workers = 0;       ///< 0 = the cores
};

/// Throws input_error naming the option for a request that cannot be tuned: not exactly one of
/// images and cpu_per_sample, sample_bytes without cpu_per_sample, an images folder without
/// JPEGs, a step time of 0, a target outside (0, 1].
void check_loader_request(const loader_request& request);

/// The result: every trial a case, the confirming run a case, and the `tune` block.
[[nodiscard]] result::run_result tune_loader(const loader_request& request, const session& s);

}  // namespace pinbench::tune
