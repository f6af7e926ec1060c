// The case extras that say under what conditions a case ran, as JSON: `numa` (where its host
// memory and threads were placed; transfer and loader cases) and `link_ceiling` (the link its
// bandwidth is judged against; transfer and collective cases). See docs/results.md (NUMA
// placement) and docs/transfer.md (the link ceiling).
#pragma once

#include <nlohmann/json.hpp>

#include "device/numa_placement.hpp"
#include "device/pci_link.hpp"

namespace pinbench::kinds {

/// {node, cpus, placed, reason, requested} and buffer_node when it was read.
[[nodiscard]] nlohmann::json numa_json(const device::numa_record& r);

/// {gbps, source}, or {gbps: null, reason} where there is no ceiling.
[[nodiscard]] nlohmann::json link_ceiling_json(const device::link_ceiling& c);

}  // namespace pinbench::kinds
