// Kind `data_parallel`: one training step of a model over several devices, as
// torch.nn.DataParallel (dp) or DistributedDataParallel (ddp) runs it: step time, samples/s,
// communication time and how much of it backward hid, and each device's peak memory.
#pragma once

#include <memory>

#include "measure/engine.hpp"

namespace pinbench::kinds::data_parallel {

/// The engine of the kind, for its description (kinds/data_parallel/data_parallel_kind.cpp).
[[nodiscard]] std::unique_ptr<measure::engine> make_engine();

}  // namespace pinbench::kinds::data_parallel
