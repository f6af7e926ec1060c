// Kind `loader`: its description for the registry (kinds/registry.cpp).
#pragma once

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds::loader {

/// Params, engine, table columns and charts of the kind.
/// The kind's name in scenario files and results; code that writes a scenario of this kind
/// names it by this.
inline constexpr const char* kind_name = "loader";

[[nodiscard]] kind_spec describe();

}  // namespace pinbench::kinds::loader
