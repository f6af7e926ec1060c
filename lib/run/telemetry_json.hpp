// NVML telemetry (device/telemetry/) as the result and `pinbench info --format json` write it.
#pragma once

#include <nlohmann/json.hpp>

#include "device/telemetry/telemetry.hpp"

namespace pinbench::run {

/// {index, name, pci_bus_id, sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz, mem_clock_max_mhz,
/// clock_event_reasons: [words], power_w, temperature_c, pcie_gen, pcie_width, pcie_gen_max,
/// pcie_width_max, memory_used_bytes, memory_total_bytes}: null where NVML could not say.
[[nodiscard]] nlohmann::json telemetry_json(const device::telemetry::snapshot& s);
/// {available, reason, library, missing, devices: [snapshot]}.
[[nodiscard]] nlohmann::json telemetry_json(const device::telemetry::reading& r);

}  // namespace pinbench::run
