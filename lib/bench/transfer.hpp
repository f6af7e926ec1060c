// Kind `transfer`: host<->device copies by memory kind, mode, size, with optional overlapping compute.
#pragma once

#include <memory>

#include "bench/engine.hpp"

namespace pinbench::bench {

[[nodiscard]] std::unique_ptr<engine> make_transfer_engine();

}  // namespace pinbench::bench
