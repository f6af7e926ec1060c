// Kind `collective`: one collective per case over a group (collective/), timed as nccl-tests
// times it.
#pragma once

#include <memory>

#include "measure/engine.hpp"

namespace pinbench::kinds::collective {

/// The engine of the kind, for its description (kinds/collective/collective_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

}  // namespace pinbench::kinds::collective
