// The PyTorch release the caching allocator follows, edge for edge, and the choices that
// depend on the release: results and the README name both.
#pragma once

#include <string_view>
#include <vector>

namespace pinbench::alloc {

/// Constants, rules and messages are those of this release's c10/cuda/CUDACachingAllocator.cpp
/// and CUDAAllocatorConfig.cpp (and torch.cuda.set_per_process_memory_fraction).
inline constexpr std::string_view pytorch_version = "2.6.0";

/// What differs between PyTorch releases at the edges, as pinbench does it (one line each).
[[nodiscard]] const std::vector<std::string_view>& pytorch_version_choices();

}  // namespace pinbench::alloc
