// Kind `collective`: NCCL's collectives as nccl-tests measures them (time, algbw, busbw), over
// this process's devices or the launch's processes.
#pragma once

#include "kinds/kind_spec.hpp"

namespace pinbench::kinds::collective {

[[nodiscard]] kind_spec describe();

}  // namespace pinbench::kinds::collective
