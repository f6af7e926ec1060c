// The result's `environment` block: what ran where (backend, device, host, timer, warnings).
#include <optional>

#include "core/clock.hpp"
#include "core/sysinfo.hpp"
#include "run/runner.hpp"

namespace pinbench::run {

namespace {

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <class T>
void put_if(nlohmann::json& out, const char* key, const std::optional<T>& v) {
  if (v) out[key] = *v;
}

}  // namespace

nlohmann::json device_json(const device::description& d) {
  nlohmann::json out;
  out["name"] = d.name;
  out["emulated"] = d.emulated;
  out["memory_bytes"] = d.memory_bytes;
  put_if(out, "capacity_bytes", d.capacity_bytes);
  out["uuid"] = or_null(d.uuid);
  out["driver"] = or_null(d.driver);
  out["runtime"] = or_null(d.runtime);
  if (d.pcie)
    out["pcie"] = {{"gen", or_null(d.pcie->gen)},
                   {"width", or_null(d.pcie->width)},
                   {"max_gen", or_null(d.pcie->max_gen)},
                   {"max_width", or_null(d.pcie->max_width)}};
  else
    out["pcie"] = nullptr;
  put_if(out, "index", d.index);
  put_if(out, "compute_capability", d.compute_capability);
  put_if(out, "multiprocessors", d.multiprocessors);
  put_if(out, "clock_mhz", d.clock_mhz);
  put_if(out, "copy_engines", d.copy_engines);
  put_if(out, "pci_bus_id", d.pci_bus_id);
  put_if(out, "virtual_memory", d.virtual_memory);
  put_if(out, "vm_granularity_bytes", d.vm_granularity_bytes);
  put_if(out, "async_alloc", d.async_alloc);
  put_if(out, "host_register", d.host_register);
  return out;
}

nlohmann::json environment_block(device::backend& dev) {
  nlohmann::json env;
  env["backend"] = std::string(dev.name());
  env["device"] = device_json(dev.describe());
  env["host"] = read_host_info();
  const timer_cost& timer = timer_overhead();
  env["timer"] = {{"clock", "steady_clock"},
                  {"read_ns", timer.read_ns},
                  {"resolution_ns", timer.resolution_ns},
                  {"reads_per_batch", timer.reads_per_batch},
                  {"samples", timer.samples}};
  env["warnings"] = dev.warnings();
  return env;
}

nlohmann::json process_block() {
  const process_info p = read_process_info();
  return {{"peak_rss_bytes", p.peak_rss_bytes}, {"open_fds_at_end", p.open_fds}};
}

}  // namespace pinbench::run
