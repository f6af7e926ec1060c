// Loading libnvidia-ml.so.1 with dlopen, resolving its calls, and initialising it.
#include "device/telemetry/nvml_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pinbench::device::telemetry {

namespace {

constexpr const char* soname = "libnvidia-ml.so.1";

template <class F>
void resolve(void* handle, const char* name, F& out, std::vector<std::string>& missing) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    missing.emplace_back(name);
    return;
  }
  out = reinterpret_cast<F>(sym);
}

struct loaded {
  nvml_library lib;
  bool usable = false;
  std::string reason;
};

loaded find_and_load() {
  loaded out;
  const char* override_path = std::getenv("PINBENCH_NVML_LIBRARY");
  const std::string what =
      override_path != nullptr && *override_path != '\0' ? override_path : soname;
  void* handle = ::dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    const std::string why = e != nullptr ? e : what + ": cannot be loaded";
    out.reason = what == soname ? fmt::format(
                                      "no NVML library ({}; set PINBENCH_NVML_LIBRARY to "
                                      "its path): {}",
                                      soname, why)
                                : fmt::format("PINBENCH_NVML_LIBRARY={}: {}", what, why);
    return out;
  }
  auto& lib = out.lib;
  auto& missing = lib.missing;
  resolve(handle, "nvmlInit_v2", lib.init, missing);
  resolve(handle, "nvmlShutdown", lib.shutdown, missing);
  resolve(handle, "nvmlErrorString", lib.error_string, missing);
  resolve(handle, "nvmlDeviceGetCount_v2", lib.device_count, missing);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", lib.handle_by_index, missing);
  resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", lib.handle_by_pci_bus_id, missing);
  resolve(handle, "nvmlDeviceGetName", lib.name, missing);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", lib.pci_info, missing);
  resolve(handle, "nvmlDeviceGetClockInfo", lib.clock, missing);
  resolve(handle, "nvmlDeviceGetMaxClockInfo", lib.max_clock, missing);
  resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", lib.clock_event_reasons, missing);
  if (lib.clock_event_reasons == nullptr) {
    // Drivers before 535 know the call by its former name only: not missing if that is there.
    std::vector<std::string> old_name_missing;
    resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", lib.clock_event_reasons,
            old_name_missing);
    if (old_name_missing.empty()) missing.pop_back();
  }
  resolve(handle, "nvmlDeviceGetPowerUsage", lib.power_usage, missing);
  resolve(handle, "nvmlDeviceGetTemperature", lib.temperature, missing);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", lib.pcie_gen, missing);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", lib.pcie_width, missing);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", lib.pcie_gen_max, missing);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", lib.pcie_width_max, missing);
  resolve(handle, "nvmlDeviceGetMemoryInfo", lib.memory_info, missing);

  Dl_info info{};
  lib.path = ::dladdr(reinterpret_cast<void*>(::dlsym(handle, "nvmlInit_v2")), &info) != 0 &&
                     info.dli_fname != nullptr
                 ? info.dli_fname
                 : what;
  if (lib.init == nullptr || lib.device_count == nullptr || lib.handle_by_index == nullptr) {
    out.reason =
        fmt::format("{} lacks {}: no device can be read", lib.path, fmt::join(missing, ", "));
    ::dlclose(handle);
    return out;
  }
  if (const nvml_return status = lib.init(); status != nvml_success) {
    out.reason = lib.describe_error(status, "nvmlInit_v2");
    ::dlclose(handle);
    return out;
  }
  // Kept loaded and initialised for the life of the process (as NCCL is): polling threads may
  // read it until the end, and the driver releases NVML when the process exits.
  out.usable = true;
  return out;
}

}  // namespace

std::string nvml_library::describe_error(nvml_return status, const char* call) const {
  const char* text = error_string != nullptr ? error_string(status) : nullptr;
  return fmt::format("{}: {} (nvmlReturn {})", call, text != nullptr ? text : "error", status);
}

namespace {

const loaded& loaded_once() {
  static const loaded state = find_and_load();
  return state;
}

}  // namespace

const nvml_library& nvml_attempt() {
  return loaded_once().lib;
}

const nvml_library* load_nvml(std::string* reason) {
  const loaded& state = loaded_once();
  if (!state.usable) {
    if (reason != nullptr) *reason = state.reason;
    return nullptr;
  }
  return &state.lib;
}

}  // namespace pinbench::device::telemetry
