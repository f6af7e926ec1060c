#include "run/telemetry_json.hpp"

namespace pinbench::run {

namespace {

template <class T>
nlohmann::json nvml_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace

nlohmann::json telemetry_json(const device::telemetry::snapshot& s) {
  return {{"index", s.index},
          {"name", nvml_or_null(s.name)},
          {"pci_bus_id", nvml_or_null(s.pci_bus_id)},
          {"sm_clock_mhz", nvml_or_null(s.sm_clock_mhz)},
          {"sm_clock_max_mhz", nvml_or_null(s.sm_clock_max_mhz)},
          {"mem_clock_mhz", nvml_or_null(s.mem_clock_mhz)},
          {"mem_clock_max_mhz", nvml_or_null(s.mem_clock_max_mhz)},
          {"clock_event_reasons",
           s.clock_event_reasons
               ? nlohmann::json(device::telemetry::reason_names(*s.clock_event_reasons))
               : nlohmann::json()},
          {"power_w", nvml_or_null(s.power_w)},
          {"temperature_c", nvml_or_null(s.temperature_c)},
          {"pcie_gen", nvml_or_null(s.pcie_gen)},
          {"pcie_width", nvml_or_null(s.pcie_width)},
          {"pcie_gen_max", nvml_or_null(s.pcie_gen_max)},
          {"pcie_width_max", nvml_or_null(s.pcie_width_max)},
          {"memory_used_bytes", nvml_or_null(s.memory_used_bytes)},
          {"memory_total_bytes", nvml_or_null(s.memory_total_bytes)}};
}

nlohmann::json telemetry_json(const device::telemetry::reading& r) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& s : r.devices) devices.push_back(telemetry_json(s));
  return {{"available", r.available},
          {"reason", r.reason},
          {"library", r.library},
          {"missing", r.missing},
          {"devices", devices}};
}

}  // namespace pinbench::run
