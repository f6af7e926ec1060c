// Kind `transfer`: host<->device copies by memory kind, mode, size, with optional overlapping
// compute.
#pragma once

#include <memory>

#include "measure/engine.hpp"

namespace pinbench::kinds::transfer {

/// The engine of the kind, for its description (kinds/transfer/transfer_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

}  // namespace pinbench::kinds::transfer
