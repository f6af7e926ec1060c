// Kind `loader`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "image/augment.hpp"
#include "kinds/params.hpp"
#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::loader {

/// Where samples come from.
using source_kind = pinbench::loader::dataset_spec::source_kind;
inline constexpr named<source_kind> source_kinds[] = {
    {"memory", source_kind::memory}, {"file", source_kind::file}, {"jpeg", source_kind::jpeg}};
inline constexpr choice<source_kind> source_choice{"dataset.source", source_kinds,
                                                   source_kind::memory};

/// Whether the dataset's files stay in the page cache between epochs (dataset_spec::cold_cache).
enum class page_cache { warm, cold };
inline constexpr named<page_cache> page_caches[] = {{"warm", page_cache::warm},
                                                    {"cold", page_cache::cold}};
inline constexpr choice<page_cache> cache_choice{"dataset.cache", page_caches, page_cache::warm};

/// What a jpeg sample becomes.
inline constexpr named<image::tensor_format> tensor_formats[] = {
    {"float32", image::tensor_format::float32_chw}, {"uint8", image::tensor_format::uint8_chw}};
inline constexpr choice<image::tensor_format> output_choice{"dataset.output", tensor_formats,
                                                            image::tensor_format::float32_chw};

/// How batches are pinned.
inline constexpr named<pinbench::loader::pin_mode> pin_modes[] = {
    {"per_batch", pinbench::loader::pin_mode::per_batch},
    {"ring", pinbench::loader::pin_mode::ring}};
inline constexpr choice<pinbench::loader::pin_mode> pin_mode_choice{
    "pin_mode", pin_modes, pinbench::loader::pin_mode::per_batch};

/// How workers run.
inline constexpr named<pinbench::loader::worker_method> worker_methods[] = {
    {"thread", pinbench::loader::worker_method::thread},
    {"process", pinbench::loader::worker_method::process}};
inline constexpr choice<pinbench::loader::worker_method> worker_method_choice{
    "worker_method", worker_methods, pinbench::loader::worker_method::process};

/// The names of the params besides the choices' own: the kind's specs, its parser and code that
/// writes a scenario (tune's trials, with set_param) all use these.
namespace param {
inline constexpr const char* samples = "dataset.samples";
inline constexpr const char* sample_bytes = "dataset.sample_bytes";
inline constexpr const char* cpu_per_sample = "dataset.cpu_per_sample";
inline constexpr const char* dir = "dataset.dir";
inline constexpr const char* crop = "dataset.crop";
inline constexpr const char* batch_size = "batch_size";
inline constexpr const char* num_workers = "num_workers";
inline constexpr const char* persistent_workers = "persistent_workers";
inline constexpr const char* prefetch_factor = "prefetch_factor";
inline constexpr const char* pin_memory = "pin_memory";
inline constexpr const char* non_blocking = "non_blocking";
inline constexpr const char* epochs = "epochs";
inline constexpr const char* batches = "batches";
inline constexpr const char* compute_per_batch = "compute_per_batch";
}  // namespace param

struct loader_params final : measure::case_params {
  pinbench::loader::dataset_spec dataset;
  pinbench::loader::loader_spec spec;
  pinbench::loader::pin_mode mode = pin_mode_choice.default_value();
  std::size_t ring_slots = 0;  // resolved: never 0
  std::size_t pinned_limit = 0;
  bool non_blocking = true;
  std::uint64_t epochs = 1;
  std::uint64_t batches = 0;  // 0 = all
  std::int64_t compute_ns = 0;
  bool verify = true;
};

/// The case's params (complete and normalised) as loader_params (spec.seed left 0: the run's
/// seed is the engine's); throws input_error naming `source` and the param for a combination
/// that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                                       const std::string& source);

}  // namespace pinbench::kinds::loader
