// Kind `collective`: NCCL's collectives as nccl-tests measures them (time, algbw, busbw), over
// this process's devices or the launch's processes.
#pragma once

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds::collective {

/// The kind's name in scenario files and results; code that writes a scenario of this kind
/// names it by this.
inline constexpr const char* kind_name = "collective";

[[nodiscard]] kind_spec describe();

}  // namespace pinbench::kinds::collective
