// Kind `allocator`'s charts for the HTML report.
#pragma once

#include <string>
#include <vector>

#include "chart/figure.hpp"
#include "result/result.hpp"

namespace pinbench::kinds::allocator {

/// Peak allocated vs reserved bytes per case, then each completed case's timeline and segment
/// map; ids start with `id_prefix`.
[[nodiscard]] std::vector<chart::figure> figures(const result::scenario_result& s,
                                                 const std::string& id_prefix);

}  // namespace pinbench::kinds::allocator
