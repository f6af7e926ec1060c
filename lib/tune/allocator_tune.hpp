// `pinbench tune allocator TRACE`: which PYTORCH_CUDA_ALLOC_CONF avoids the trace's OOM, with the
// least device memory reserved. Replays the trace under the setting in use (the snapshot's
// allocator_settings, else PyTorch's defaults), searches the options, and confirms the answer
// and the setting in use with the allocator kind's own engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "alloc/pytorch_version.hpp"
#include "result/result.hpp"
#include "tune/session.hpp"

namespace pinbench::tune {

struct allocator_request {
  std::string trace;  ///< pinbench.trace/1 JSON, RMM replay CSV or a PyTorch snapshot pickle
  /// The device's memory; none: the CUDA device's total (an input_error on the host backend).
  std::optional<std::uint64_t> capacity;
  std::optional<double> memory_fraction;  ///< set_per_process_memory_fraction
  /// A snapshot's device_traces entry; none: the device whose trace has the OOM, else the one
  /// with the most events.
  std::optional<int> device;
  /// The PyTorch release whose rules decide; none: the newest a snapshot's format allows.
  std::optional<alloc::pytorch_release> pytorch;
  /// Threads replaying candidates side by side; 0 = the cores.
  unsigned jobs = 0;
};

/// The result: every setting tried a case (the search's replays in one scenario, the confirming
/// runs in another), and the `tune` block with the ranked trials and the answer.
[[nodiscard]] result::run_result tune_allocator(const allocator_request& request, const session& s);

}  // namespace pinbench::tune
