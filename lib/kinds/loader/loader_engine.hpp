// Kind `loader`: a DataLoader feeding the device; samples/s, whether the device waited for data,
// and where each step's time went.
#pragma once

#include <memory>

#include "measure/engine.hpp"

namespace pinbench::kinds::loader {

/// The engine of the kind, for its description (kinds/loader/loader_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

/// The one-line verdict of a loader scenario, from its cases' medians: data-bound or not, and
/// which case keeps the device busiest ("data-bound at num_workers=0: the device waited 63% of
/// the time; num_workers=4 reaches 97% busy (1520 samples/s)"). Empty when no case succeeded.
[[nodiscard]] std::string verdict(const result::scenario_result& s);

}  // namespace pinbench::kinds::loader
