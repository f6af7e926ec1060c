// Kind `loader`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loader/dataset.hpp"
#include "loader/loader.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::loader {

struct loader_params final : measure::case_params {
  pinbench::loader::dataset_spec dataset;
  pinbench::loader::loader_spec spec;
  pinbench::loader::pin_mode mode = pinbench::loader::pin_mode::per_batch;
  std::size_t ring_slots = 0;  // resolved: never 0
  std::size_t pinned_limit = 0;
  bool non_blocking = true;
  std::uint64_t epochs = 1;
  std::uint64_t batches = 0;   // 0 = all
  std::int64_t compute_ns = 0;
  bool verify = true;
};

/// The case's params (complete and normalised) as loader_params (spec.seed left 0: the run's
/// seed is the engine's); throws input_error naming `source` and the param for a combination
/// that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(
    const nlohmann::json& params, const std::string& source);

}  // namespace pinbench::kinds::loader
