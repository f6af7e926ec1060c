// NVML, loaded at run time: libnvidia-ml is never linked, so the binary still needs only the C
// and C++ runtimes, and the build needs no CUDA. nvml.h is not included either: the few types
// and constants pinbench uses are declared here, as NVML's ABI fixes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pinbench::device::telemetry {

using nvml_return = int;  // nvmlReturn_t
inline constexpr nvml_return nvml_success = 0;

struct nvml_device_st;  // opaque
using nvml_device = nvml_device_st*;

/// nvmlPciInfo_t (the layout nvmlDeviceGetPciInfo_v3 fills).
struct nvml_pci_info {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];  ///< "00000000:17:00.0"
};

/// nvmlMemory_t (bytes).
struct nvml_memory {
  unsigned long long total, free, used;
};

// nvmlClockType_t
inline constexpr int nvml_clock_sm = 1;
inline constexpr int nvml_clock_mem = 2;
// nvmlTemperatureSensors_t
inline constexpr int nvml_temperature_gpu = 0;

/// The NVML calls pinbench makes, resolved with dlsym; any of them may be null (an older or
/// partial library): the facts it gives are then absent, and its name is in `missing`.
struct nvml_library {
  std::string path;                  ///< the file dlopen loaded
  std::vector<std::string> missing;  ///< entry points the library lacks
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*device_count)(unsigned int*) = nullptr;
  nvml_return (*handle_by_index)(unsigned int, nvml_device*) = nullptr;
  nvml_return (*handle_by_pci_bus_id)(const char*, nvml_device*) = nullptr;
  nvml_return (*name)(nvml_device, char*, unsigned int) = nullptr;
  nvml_return (*pci_info)(nvml_device, nvml_pci_info*) = nullptr;
  nvml_return (*clock)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*max_clock)(nvml_device, int, unsigned int*) = nullptr;
  /// nvmlDeviceGetCurrentClocksEventReasons, or on older drivers the same call's former name,
  /// nvmlDeviceGetCurrentClocksThrottleReasons.
  nvml_return (*clock_event_reasons)(nvml_device, unsigned long long*) = nullptr;
  nvml_return (*power_usage)(nvml_device, unsigned int*) = nullptr;  ///< milliwatts
  nvml_return (*temperature)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*pcie_gen)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*pcie_width)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*pcie_gen_max)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*pcie_width_max)(nvml_device, unsigned int*) = nullptr;
  nvml_return (*memory_info)(nvml_device, nvml_memory*) = nullptr;

  /// "CALL: NVML's message (nvmlReturn N)".
  [[nodiscard]] std::string describe_error(nvml_return status, const char* call) const;
};

/// The library, loaded and initialised once per process (later calls return the same answer):
/// nullptr when none can serve, with why in `reason`. Searched: $PINBENCH_NVML_LIBRARY when set
/// (alone), else the dynamic loader's search for libnvidia-ml.so.1. It needs nvmlInit_v2,
/// nvmlDeviceGetCount_v2 and nvmlDeviceGetHandleByIndex_v2; every other call is optional.
[[nodiscard]] const nvml_library* load_nvml(std::string* reason);

/// What that load found even where the library cannot serve: the file opened (`path`, empty
/// when none opened) and the calls it lacks (`missing`), for `pinbench info`.
[[nodiscard]] const nvml_library& nvml_attempt();

}  // namespace pinbench::device::telemetry
