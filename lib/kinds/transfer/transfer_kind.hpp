// Kind `transfer`: its description for the registry (kinds/registry.cpp).
#pragma once

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds::transfer {

/// Params, engine, table columns and charts of the kind.
[[nodiscard]] kind_spec describe();

}  // namespace pinbench::kinds::transfer
