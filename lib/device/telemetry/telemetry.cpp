// NVML snapshots, reasons in words, and the polling watch.
#include "device/telemetry/telemetry.hpp"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "device/pci_address.hpp"

namespace pinbench::device::telemetry {

namespace {

// Calls `call(handle, args..., &value)` when the library has it; the value when it succeeded.
template <class T, class F, class... A>
std::optional<T> ask(F call, nvml_device d, A... args) {
  if (call == nullptr) return std::nullopt;
  T value{};
  if (call(d, args..., &value) != nvml_success) return std::nullopt;
  return value;
}

snapshot read_device(const nvml_library& lib, nvml_device d, int index) {
  snapshot s;
  s.index = index;
  if (lib.name != nullptr) {
    char name[96] = {};
    if (lib.name(d, name, sizeof name) == nvml_success) s.name = std::string(name);
  }
  if (auto pci = ask<nvml_pci_info>(lib.pci_info, d)) {
    pci->bus_id[sizeof pci->bus_id - 1] = '\0';
    s.pci_bus_id = std::string(pci->bus_id);
  }
  s.sm_clock_mhz = ask<unsigned>(lib.clock, d, nvml_clock_sm);
  s.sm_clock_max_mhz = ask<unsigned>(lib.max_clock, d, nvml_clock_sm);
  s.mem_clock_mhz = ask<unsigned>(lib.clock, d, nvml_clock_mem);
  s.mem_clock_max_mhz = ask<unsigned>(lib.max_clock, d, nvml_clock_mem);
  if (auto r = ask<unsigned long long>(lib.clock_event_reasons, d)) s.clock_event_reasons = *r;
  if (auto mw = ask<unsigned>(lib.power_usage, d)) s.power_w = *mw / 1000.0;
  s.temperature_c = ask<unsigned>(lib.temperature, d, nvml_temperature_gpu);
  s.pcie_gen = ask<unsigned>(lib.pcie_gen, d);
  s.pcie_width = ask<unsigned>(lib.pcie_width, d);
  s.pcie_gen_max = ask<unsigned>(lib.pcie_gen_max, d);
  s.pcie_width_max = ask<unsigned>(lib.pcie_width_max, d);
  if (auto m = ask<nvml_memory>(lib.memory_info, d)) {
    s.memory_used_bytes = m->used;
    s.memory_total_bytes = m->total;
  }
  return s;
}

}  // namespace

std::vector<std::string> reason_names(std::uint64_t mask) {
  static constexpr std::pair<std::uint64_t, const char*> names[] = {
      {reason_gpu_idle, "gpu_idle"},
      {reason_applications_clocks, "applications_clocks_setting"},
      {reason_sw_power_cap, "sw_power_cap"},
      {reason_hw_slowdown, "hw_slowdown"},
      {reason_sync_boost, "sync_boost"},
      {reason_sw_thermal, "sw_thermal_slowdown"},
      {reason_hw_thermal, "hw_thermal_slowdown"},
      {reason_hw_power_brake, "hw_power_brake_slowdown"},
      {reason_display_clocks, "display_clock_setting"}};
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if ((mask & bit) != 0) out.emplace_back(name);
  }
  if ((mask & ~known) != 0) out.push_back(fmt::format("{:#x}", mask & ~known));
  return out;
}

reading read_all() {
  reading out;
  const nvml_library* lib = load_nvml(&out.reason);
  if (lib == nullptr) {
    out.library = nvml_attempt().path;
    out.missing = nvml_attempt().missing;
    return out;
  }
  out.library = lib->path;
  out.missing = lib->missing;
  unsigned count = 0;
  if (const nvml_return status = lib->device_count(&count); status != nvml_success) {
    out.reason = lib->describe_error(status, "nvmlDeviceGetCount_v2");
    return out;
  }
  out.available = true;
  for (unsigned i = 0; i < count; ++i) {
    nvml_device d = nullptr;
    if (lib->handle_by_index(i, &d) != nvml_success) continue;  // e.g. no permission for it
    out.devices.push_back(read_device(*lib, d, static_cast<int>(i)));
  }
  return out;
}

// ---- watch ----------------------------------------------------------------------------------

watch::watch(const nvml_library& lib, nvml_device handle, int index)
    : lib_(lib), handle_(handle), index_(index) {}

watch::~watch() {
  stop();
}

std::unique_ptr<watch> watch::by_index(int index, std::string& reason) {
  const nvml_library* lib = load_nvml(&reason);
  if (lib == nullptr) return nullptr;
  unsigned count = 0;
  if (const nvml_return status = lib->device_count(&count); status != nvml_success) {
    reason = lib->describe_error(status, "nvmlDeviceGetCount_v2");
    return nullptr;
  }
  if (index < 0 || static_cast<unsigned>(index) >= count) {
    reason = fmt::format("no NVML device {} (NVML sees {})", index, count);
    return nullptr;
  }
  nvml_device d = nullptr;
  if (const nvml_return status = lib->handle_by_index(static_cast<unsigned>(index), &d);
      status != nvml_success) {
    reason = lib->describe_error(status, "nvmlDeviceGetHandleByIndex_v2");
    return nullptr;
  }
  return std::unique_ptr<watch>(new watch(*lib, d, index));
}

std::unique_ptr<watch> watch::by_pci_bus_id(const std::string& bus_id, std::string& reason) {
  const nvml_library* lib = load_nvml(&reason);
  if (lib == nullptr) return nullptr;
  // The index is what the result records: found by comparing every device's bus id (which
  // also serves a library without nvmlDeviceGetHandleByPciBusId_v2).
  const std::string wanted = sysfs_pci_address(bus_id);
  unsigned count = 0;
  if (lib->device_count(&count) == nvml_success && lib->pci_info != nullptr)
    for (unsigned i = 0; i < count; ++i) {
      nvml_device d = nullptr;
      nvml_pci_info pci{};
      if (lib->handle_by_index(i, &d) != nvml_success || lib->pci_info(d, &pci) != nvml_success)
        continue;
      pci.bus_id[sizeof pci.bus_id - 1] = '\0';
      // NVML's "00000000:17:00.0" and CUDA's "0000:17:00.0" name one device: compare both
      // in sysfs's spelling.
      if (!wanted.empty() && sysfs_pci_address(pci.bus_id) == wanted)
        return std::unique_ptr<watch>(new watch(*lib, d, static_cast<int>(i)));
    }
  reason = fmt::format("no NVML device at PCI bus id {}", bus_id);
  return nullptr;
}

snapshot watch::read() const {
  return read_device(lib_, handle_, index_);
}

std::uint64_t watch::reasons_now() const {
  return ask<unsigned long long>(lib_.clock_event_reasons, handle_).value_or(0);
}

void watch::note(std::uint64_t reasons, std::uint64_t read_in) noexcept {
  seen_.fetch_or(reasons);
  // A read begun before the last mark() belongs to the sample before it, not to this one.
  if (generation_.load() == read_in) since_mark_.fetch_or(reasons);
}

std::uint64_t watch::since_mark() {
  const std::uint64_t g = generation_.load();
  note(reasons_now(), g);
  return since_mark_.load();
}

void watch::start(int period_ms) {
  stop();
  seen_.store(0);
  since_mark_.store(0);
  if (lib_.clock_event_reasons == nullptr) return;  // nothing to poll
  {
    const std::lock_guard lock(mutex_);
    stopping_ = false;
  }
  poller_ = std::thread([this, period_ms] {
    std::unique_lock lock(mutex_);
    for (;;) {
      lock.unlock();
      const std::uint64_t g = generation_.load();
      note(reasons_now(), g);
      lock.lock();
      if (wake_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stopping_; }))
        return;
    }
  });
}

void watch::stop() {
  if (!poller_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  poller_.join();
}

link_ceiling nvml_link_ceiling(const std::string& bus_id) {
  std::string reason;
  const auto w = watch::by_pci_bus_id(bus_id, reason);
  if (!w) return {.reason = reason};
  const snapshot s = w->read();
  const auto gen = s.pcie_gen_max ? s.pcie_gen_max : s.pcie_gen;
  const auto width = s.pcie_width_max ? s.pcie_width_max : s.pcie_width;
  if (!gen || !width) return {.reason = fmt::format("NVML gives no PCIe link for {}", bus_id)};
  return pcie_link_ceiling(static_cast<int>(*gen), static_cast<int>(*width), "NVML");
}

}  // namespace pinbench::device::telemetry
