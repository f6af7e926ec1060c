// Kind `collective`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "collective/collective.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::collective {

struct collective_params final : measure::case_params {
  pinbench::collective::op op = pinbench::collective::op::all_reduce;
  pinbench::collective::dtype type = pinbench::collective::dtype::float32;
  std::uint64_t bytes = 0;  ///< nccl-tests' size: the larger of the send and receive buffers
  int ranks = 0;            ///< 0: every process of the launch, else every device here
  bool in_place = false;
  int iterations = 0;  ///< collectives per sample; 0: enough for about a millisecond
  int root = 0;        ///< broadcast's
  bool verify = true;
};

/// The case's params (complete and normalised) as collective_params; throws input_error naming
/// `source` and the param for a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(
    const nlohmann::json& params, const std::string& source);

}  // namespace pinbench::kinds::collective
