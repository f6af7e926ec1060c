// A fake libnvidia-ml for the tests: one device, "Fake H200", with fixed plausible figures, so
// that `info` and the per-case telemetry are exercised without a GPU. Told by the environment:
//   FAKE_NVML_THROTTLE_AFTER=N  the clock event reasons calls after the N-th report HW thermal
//                               slowdown (0: from the first call). Counting calls, not time,
//                               keeps the tests independent of the machine's load.
// Built twice: FAKE_NVML_NO_POWER is an older, partial library: no nvmlDeviceGetPowerUsage, and
// the clock event reasons under their name before driver 535 (...ClocksThrottleReasons).
// C++ only for the build's sake (C is not enabled in every build); the interface is NVML's C.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct fake_device* nvmlDevice_t;
enum { SUCCESS = 0, ERROR_INVALID_ARGUMENT = 2, ERROR_NOT_FOUND = 6 };

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

struct fake_device {
  int unused;
};
static struct fake_device the_device;
static const char* const bus_id = "00000000:17:00.0";
static std::atomic<long> reason_calls{0};

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return SUCCESS;
}
EXPORT nvmlReturn_t nvmlShutdown(void) {
  return SUCCESS;
}
EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  return r == SUCCESS ? "Success" : "Fake error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 1;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index != 0) return ERROR_INVALID_ARGUMENT;
  *device = &the_device;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* id, nvmlDevice_t* device) {
  if (std::strcmp(id, bus_id) != 0) return ERROR_NOT_FOUND;
  *device = &the_device;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int length) {
  (void)d;
  std::snprintf(name, length, "%s", "Fake H200");
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  (void)d;
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", "0000:17:00.0");
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id);
  pci->bus = 0x17;
  pci->pciDeviceId = 0x233510de;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  (void)d;
  *mhz = type == 2 ? 2619u : 1980u;  // memory : SM (and the others)
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  (void)d;
  *mhz = type == 2 ? 2619u : 1980u;
  return SUCCESS;
}

#ifdef FAKE_NVML_NO_POWER
#define FAKE_NVML_REASONS nvmlDeviceGetCurrentClocksThrottleReasons
#else
#define FAKE_NVML_REASONS nvmlDeviceGetCurrentClocksEventReasons
#endif
EXPORT nvmlReturn_t FAKE_NVML_REASONS(nvmlDevice_t d, unsigned long long* reasons) {
  (void)d;
  const long call = reason_calls.fetch_add(1) + 1;
  const char* after = std::getenv("FAKE_NVML_THROTTLE_AFTER");
  *reasons = after != nullptr && call > std::atol(after) ? 0x40ull  // HW thermal slowdown
                                                         : 0x1ull;  // GPU idle
  return SUCCESS;
}

#ifndef FAKE_NVML_NO_POWER
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* milliwatts) {
  (void)d;
  *milliwatts = 123456u;
  return SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* celsius) {
  (void)d;
  if (sensor != 0) return ERROR_INVALID_ARGUMENT;
  *celsius = 41u;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int* gen) {
  (void)d;
  *gen = 5u;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int* width) {
  (void)d;
  *width = 16u;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int* gen) {
  (void)d;
  *gen = 5u;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int* width) {
  (void)d;
  *width = 16u;
  return SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  (void)d;
  memory->total = 150ull << 30;
  memory->used = 1ull << 30;
  memory->free = memory->total - memory->used;
  return SUCCESS;
}
