// Kind `transfer`: its description for the registry (kinds/registry.cpp).
#pragma once

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds::transfer {

/// Params, engine, table columns and charts of the kind.
/// The kind's name in scenario files and results; code that writes a scenario of this kind
/// names it by this.
inline constexpr const char* kind_name = "transfer";

[[nodiscard]] kind_spec describe();

}  // namespace pinbench::kinds::transfer
