// Kind `allocator`'s params for one case, parsed once when the scenario is expanded (the
// allocator config included, unless it is "env": the environment is read when the case starts).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "alloc/config.hpp"
#include "alloc/workload.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::allocator {

struct allocator_params final : measure::case_params {
  std::string allocator, workload;
  std::string trace_file;  ///< resolved against the scenario's folder
  /// The caching allocator's options; none for "env" (config_from_environment at the case).
  std::optional<alloc::config> config;
  std::uint64_t device_memory = 0;
  /// set_per_process_memory_fraction's argument; none: never called.
  std::optional<double> memory_fraction;
  std::int64_t empty_cache_every = 0;
  std::string timing;  ///< "auto", "batch" or "call": how latencies are timed
  alloc::training_loop_spec loop;  ///< seed left 0: the run's seed is the engine's
  alloc::random_spec random;       ///< likewise

  [[nodiscard]] std::vector<std::string> input_files() const override {
    return trace_file.empty() ? std::vector<std::string>{} : std::vector<std::string>{trace_file};
  }
};

/// The case's params (complete and normalised) as allocator_params; throws input_error naming
/// `source` and the param for a config that does not parse or a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(
    const nlohmann::json& params, const std::string& source);

/// The caching allocator's options from PYTORCH_CUDA_ALLOC_CONF (config "env").
[[nodiscard]] alloc::config config_from_environment();

}  // namespace pinbench::kinds::allocator
