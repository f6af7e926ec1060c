// Kind `data_parallel`'s params: read once per case, with the rules across them.
#include "kinds/data_parallel/data_parallel_params.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::kinds::data_parallel {

namespace {

// Parameters and gradients are float32 tensors: the all-reduce and the sums work on whole
// elements, and every bucket boundary falls on one.
constexpr std::uint64_t element_bytes = 4;

void require_elements(const nlohmann::json& p, const char* name, const std::string& source) {
  const auto v = p.at(name).get<std::uint64_t>();
  if (v % element_bytes != 0)
    throw input_error(source, fmt::format("params.{}", name),
                      fmt::format("expected a multiple of {} bytes (float32 elements); got {}",
                                  element_bytes, v));
}

}  // namespace

std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& p,
                                                         const std::string& source) {
  auto d = std::make_shared<data_parallel_params>();
  d->mode = mode_choice.parse(p, source);
  d->devices = p.at("devices").get<int>();
  d->batch_size = p.at("batch_size").get<int>();
  d->sample_bytes = p.at("sample_bytes").get<std::uint64_t>();
  d->output_bytes = p.at("output_bytes").get<std::uint64_t>();
  d->activation_bytes = p.at("activation_bytes").get<std::uint64_t>();
  d->parameter_bytes = p.at("parameter_bytes").get<std::uint64_t>();
  d->bucket_bytes = p.at("bucket_bytes").get<std::uint64_t>();
  d->compute_per_batch_ns = p.at("compute_per_batch").get<std::int64_t>();
  d->pin_memory = p.at("pin_memory").get<bool>();
  d->verify = p.at("verify").get<bool>();
  require_elements(p, "parameter_bytes", source);
  require_elements(p, "bucket_bytes", source);
  // Every device needs a sample at least (torch's scatter would otherwise drop devices).
  if (d->devices > d->batch_size)
    throw input_error(source, "params.batch_size",
                      fmt::format("expected at least one sample per device: {} devices, batch "
                                  "of {}",
                                  d->devices, d->batch_size));
  return d;
}

}  // namespace pinbench::kinds::data_parallel
