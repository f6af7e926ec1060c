// The case extra `numa` that transfer and loader cases record (README: NUMA placement).
#pragma once

#include <nlohmann/json.hpp>

#include "device/numa_placement.hpp"

namespace pinbench::kinds {

/// {node, cpus, placed, reason, requested} and buffer_node when it was read.
[[nodiscard]] nlohmann::json numa_json(const device::numa_record& r);

}  // namespace pinbench::kinds
