// Kind `allocator`'s params: read once per case, the config parsed with them.
#include "kinds/allocator/allocator_params.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "alloc/workload.hpp"
#include "core/error.hpp"

namespace pinbench::kinds::allocator {

std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& p,
                                                         const std::string& source) {
  auto a = std::make_shared<allocator_params>();
  a->allocator = allocator_choice.parse(p, source);
  a->workload = workload_choice.parse(p, source);
  if (const auto release = p.at(param::pytorch).get<std::string>(); !release.empty())
    a->pytorch = alloc::parse_pytorch_release(release, source, "params.pytorch");
  a->config_text = p.at(param::config).get<std::string>();
  if (a->config_text != "env" && a->config_text != "snapshot")
    a->config = alloc::parse_config(a->config_text, source, "params.config",
                                    a->pytorch.value_or(alloc::pytorch_release::newest()));
  a->device_memory = p.at(param::device_memory).get<std::uint64_t>();
  if (p.contains(param::memory_fraction))
    a->memory_fraction = p.at(param::memory_fraction).get<double>();
  a->empty_cache_every = p.at("empty_cache_every").get<std::int64_t>();
  a->timing = timing_choice.parse(p, source);
  a->loop.layers = p.at("layers").get<int>();
  a->loop.activation_bytes = p.at("activation_bytes").get<std::uint64_t>();
  a->loop.parameter_bytes = p.at("parameter_bytes").get<std::uint64_t>();
  a->loop.iterations = p.at("iterations").get<int>();
  a->loop.base_batch = p.at("base_batch").get<int>();
  a->loop.batch_sizes = p.at("batch_sizes").get<std::vector<int>>();
  a->random.count = p.at("count").get<std::uint64_t>();
  a->random.max_bytes = p.at("max_bytes").get<std::uint64_t>();
  a->random.alloc_probability = p.at("alloc_probability").get<double>();
  const auto trace_file = p.at(param::trace_file).get<std::string>();
  if (a->workload == workload_kind::trace && trace_file.empty())
    throw input_error(source, "params.trace_file", "required when workload is \"trace\"");
  // A relative trace path means: next to the scenario file that names it.
  std::filesystem::path trace = trace_file;
  if (!trace.empty() && trace.is_relative() && !source.empty())
    trace = std::filesystem::path(source).parent_path() / trace;
  a->trace_file = trace.string();
  a->trace_device = p.at(param::trace_device).get<int>();
  // Found now, at validate and before run measures anything, not when the case starts.
  if (a->workload == workload_kind::trace) {
    try {
      alloc::check_trace_file(a->trace_file);
    } catch (const input_error& e) {
      throw input_error(source, "params.trace_file",
                        e.json_path().empty()
                            ? fmt::format("{}: {}", e.file(), e.message())
                            : fmt::format("{}: {}: {}", e.file(), e.json_path(), e.message()));
    }
  }
  return a;
}

alloc::config config_from_environment(alloc::pytorch_release release) {
  const char* env = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
  return alloc::parse_config(env == nullptr ? "" : env, "PYTORCH_CUDA_ALLOC_CONF", {}, release);
}

alloc::config config_for(const allocator_params& p, alloc::pytorch_release release,
                         const std::string& source) {
  if (p.config_text == "env") return config_from_environment(release);
  if (p.config && p.config->release == release) return *p.config;
  return alloc::parse_config(p.config_text, source, "params.config", release);
}

}  // namespace pinbench::kinds::allocator
