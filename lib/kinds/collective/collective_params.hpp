// Kind `collective`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "collective/collective.hpp"
#include "kinds/params.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::collective {

/// The collective; its names are collective::to_string's (a test holds the two together).
inline constexpr named<pinbench::collective::op> ops[] = {
    {"all_reduce", pinbench::collective::op::all_reduce},
    {"all_gather", pinbench::collective::op::all_gather},
    {"reduce_scatter", pinbench::collective::op::reduce_scatter},
    {"broadcast", pinbench::collective::op::broadcast},
    {"send_recv", pinbench::collective::op::send_recv}};
inline constexpr choice<pinbench::collective::op> op_choice{"op", ops,
                                                            pinbench::collective::op::all_reduce};

/// The element type; likewise collective::to_string's names.
inline constexpr named<pinbench::collective::dtype> dtypes[] = {
    {"float32", pinbench::collective::dtype::float32},
    {"float64", pinbench::collective::dtype::float64},
    {"int32", pinbench::collective::dtype::int32}};
inline constexpr choice<pinbench::collective::dtype> dtype_choice{
    "dtype", dtypes, pinbench::collective::dtype::float32};

struct collective_params final : measure::case_params {
  pinbench::collective::op op = op_choice.default_value();
  pinbench::collective::dtype type = dtype_choice.default_value();
  std::uint64_t bytes = 0;  ///< nccl-tests' size: the larger of the send and receive buffers
  int ranks = 0;            ///< 0: every process of the launch, else every device here
  bool in_place = false;
  int iterations = 0;  ///< collectives per sample; 0: enough for about a millisecond
  int root = 0;        ///< broadcast's
  bool verify = true;
};

/// The case's params (complete and normalised) as collective_params; throws input_error naming
/// `source` and the param for a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                                       const std::string& source);

}  // namespace pinbench::kinds::collective
