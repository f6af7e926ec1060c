// The keys of a scenario's "sampling" object (and of `--set sampling.KEY`). A kind's params are
// described by the kind itself (kinds/registry.hpp).
#pragma once

#include <vector>

#include "kinds/params.hpp"

namespace pinbench::scenario {

/// The keys of a scenario's "sampling" object, same shape as a kind's params.
[[nodiscard]] const std::vector<kinds::param_spec>& sampling_params();

}  // namespace pinbench::scenario
