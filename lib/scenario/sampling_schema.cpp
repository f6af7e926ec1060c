// The sampling keys of a scenario, with their defaults taken from measure::sampling.
#include "scenario/sampling_schema.hpp"

#include "scenario/scenario.hpp"

namespace pinbench::scenario {

using kinds::bounded;
using kinds::param_type;

const std::vector<kinds::param_spec>& sampling_params() {
  // Defaults come from struct sampling, so the struct and the schema cannot drift apart.
  static const sampling d;
  static const std::vector<kinds::param_spec> all = {
      bounded("warmup", kinds::param_type::integer, d.warmup, 0, false, 1e6,
              "untimed runs before sampling starts (count)"),
      bounded("min_samples", kinds::param_type::integer, d.min_samples, 1, false, 1e6,
              "samples taken at least (count)"),
      bounded("max_samples", kinds::param_type::integer, d.max_samples, 1, false, 1e6,
              "samples taken at most, >= min_samples (count)"),
      bounded("max_noise", kinds::param_type::number, d.max_noise, 0, false, std::nullopt,
              "relative standard deviation at which sampling may stop (fraction: 0.01 = 1%)"),
      bounded("min_time", kinds::param_type::duration, d.min_time_ns, 0, false, std::nullopt,
              "time spent sampling at least, unless max_samples comes first (duration)"),
      bounded("timeout", kinds::param_type::duration, d.timeout_ns, 0, true, std::nullopt,
              "time after which sampling a case stops with what it has (duration)"),
  };
  return all;
}

}  // namespace pinbench::scenario
