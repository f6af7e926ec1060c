// Kind `transfer`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/case.hpp"

namespace pinbench::kinds::transfer {

struct transfer_params final : measure::case_params {
  std::string direction, memory, mode;
  std::uint64_t bytes = 0;
  int copies = 1;  ///< per sample and lane, resolved: copies_per_sample 0 means the auto batch
  std::int64_t overlap_compute_ns = 0;
  bool verify = true;

  [[nodiscard]] bool blocking() const { return mode == "blocking"; }
  [[nodiscard]] bool pin_on_the_fly() const { return memory == "pin_on_the_fly"; }
};

/// The case's params (complete and normalised) as transfer_params; throws input_error naming
/// `source` and the param for a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(
    const nlohmann::json& params, const std::string& source);

}  // namespace pinbench::kinds::transfer
