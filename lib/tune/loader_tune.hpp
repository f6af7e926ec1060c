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

/// gpu_busy in steady state, from a run's whole-run figure: the loader kind's gpu_busy counts the
/// device idle while the first batch is built (once per iter(DataLoader), i.e. once per epoch
/// with persistent_workers=True, while a trial is a few dozen steps), and the batches ready when
/// it arrives (one per worker, built side by side during that wait; 1 without workers) are
/// consumed at the step's pace, faster than the workers can sustain. Both are taken out:
/// (steps - ready) x compute / (span - first batch - ready x compute), span = steps x compute /
/// run_busy; never below run_busy, never above 1.
[[nodiscard]] double steady_gpu_busy(double run_busy, double steps, double compute_ns,
                                     double first_batch_ns, double ready_at_first);

/// The result: every trial a case, the confirming run a case, and the `tune` block.
[[nodiscard]] result::run_result tune_loader(const loader_request& request, const session& s);

}  // namespace pinbench::tune
