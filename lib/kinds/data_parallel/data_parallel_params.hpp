// Kind `data_parallel`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kinds/params.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::data_parallel {

/// torch.nn.DataParallel (dp) or DistributedDataParallel (ddp).
enum class parallel_mode { dp, ddp };
inline constexpr named<parallel_mode> parallel_modes[] = {{"dp", parallel_mode::dp},
                                                          {"ddp", parallel_mode::ddp}};
inline constexpr choice<parallel_mode> mode_choice{"mode", parallel_modes, parallel_mode::ddp};

struct data_parallel_params final : measure::case_params {
  parallel_mode mode = mode_choice.default_value();
  int devices = 2;      ///< 0 = every device this process can drive (resolved when the case runs)
  int batch_size = 64;  ///< samples per step, the whole batch over every device
  std::uint64_t sample_bytes = 0, output_bytes = 0, activation_bytes = 0;  ///< per sample
  std::uint64_t parameter_bytes = 0;      ///< model size; the gradients are as big
  std::uint64_t bucket_bytes = 0;         ///< DDP's bucket_cap_mb, in bytes
  std::int64_t compute_per_batch_ns = 0;  ///< forward + backward of the whole batch on one device
  bool pin_memory = true;
  bool verify = true;

  [[nodiscard]] bool ddp() const { return mode == parallel_mode::ddp; }
};

/// The case's params (complete and normalised) as data_parallel_params; throws input_error
/// naming `source` and the param for a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                                       const std::string& source);

}  // namespace pinbench::kinds::data_parallel
