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
#include "kinds/params.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::allocator {

/// The allocator measured.
enum class allocator_type { caching, raw, async };
inline constexpr named<allocator_type> allocator_types[] = {{"caching", allocator_type::caching},
                                                            {"raw", allocator_type::raw},
                                                            {"async", allocator_type::async}};
inline constexpr choice<allocator_type> allocator_choice{"allocator", allocator_types,
                                                         allocator_type::caching};

/// How alloc_latency and free_latency are timed; automatic: call for a trace, else batch.
enum class timing_method { automatic, batch, call };
inline constexpr named<timing_method> timing_methods[] = {{"auto", timing_method::automatic},
                                                          {"batch", timing_method::batch},
                                                          {"call", timing_method::call}};
inline constexpr choice<timing_method> timing_choice{"timing", timing_methods,
                                                     timing_method::automatic};

/// What drives the allocator.
enum class workload_kind { training_loop, random, trace };
inline constexpr named<workload_kind> workload_kinds[] = {
    {"training_loop", workload_kind::training_loop},
    {"random", workload_kind::random},
    {"trace", workload_kind::trace}};
inline constexpr choice<workload_kind> workload_choice{"workload", workload_kinds,
                                                       workload_kind::training_loop};

/// The names of the params besides the choices' own: the kind's specs, its parser and code that
/// writes a scenario (tune's trials, with set_param) all use these.
namespace param {
inline constexpr const char* config = "config";
inline constexpr const char* pytorch = "pytorch";
inline constexpr const char* device_memory = "device_memory";
inline constexpr const char* memory_fraction = "memory_fraction";
inline constexpr const char* trace_file = "trace_file";
inline constexpr const char* trace_device = "trace_device";
}  // namespace param

struct allocator_params final : measure::case_params {
  allocator_type allocator = allocator_choice.default_value();
  workload_kind workload = workload_choice.default_value();
  std::string trace_file;  ///< resolved against the scenario's folder
  int trace_device = 0;    ///< a snapshot pickle's device_traces entry replayed
  /// The caching allocator's options as written ("env": PYTORCH_CUDA_ALLOC_CONF at the case;
  /// "snapshot": the allocator_settings of the snapshot replayed), and parsed by the `pytorch`
  /// release's rules (none for "env" and "snapshot").
  std::string config_text;
  std::optional<alloc::config> config;
  /// The PyTorch release whose rules decide; none: the newest, or for a snapshot the newest
  /// its format allows (resolved when the case starts).
  std::optional<alloc::pytorch_release> pytorch;
  std::uint64_t device_memory = 0;
  /// set_per_process_memory_fraction's argument; none: never called.
  std::optional<double> memory_fraction;
  std::int64_t empty_cache_every = 0;
  timing_method timing = timing_choice.default_value();  ///< how latencies are timed
  alloc::training_loop_spec loop;  ///< seed left 0: the run's seed is the engine's
  alloc::random_spec random;       ///< likewise

  [[nodiscard]] std::vector<std::string> input_files() const override {
    return trace_file.empty() ? std::vector<std::string>{} : std::vector<std::string>{trace_file};
  }
};

/// The case's params (complete and normalised) as allocator_params; throws input_error naming
/// `source` and the param for a config that does not parse or a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                                       const std::string& source);

/// The caching allocator's options from PYTORCH_CUDA_ALLOC_CONF (config "env"), by `release`'s
/// rules.
[[nodiscard]] alloc::config config_from_environment(alloc::pytorch_release release);

/// The config the case runs with under `release`: its own text, or the environment's.
[[nodiscard]] alloc::config config_for(const allocator_params& p, alloc::pytorch_release release,
                                       const std::string& source);

}  // namespace pinbench::kinds::allocator
