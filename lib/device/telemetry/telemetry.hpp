// GPU telemetry through NVML (as JSON: run/telemetry_json.hpp): a device's clocks, clock event
// (throttle) reasons, power, temperature, PCIe link and memory, read now (`pinbench info`) or
// around and during a case (a watch, polled on a thread). Everything is optional: a fact NVML
// cannot give is absent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device/pci_link.hpp"
#include "device/telemetry/nvml_library.hpp"

namespace pinbench::device::telemetry {

// NVML's clock event reason bits (nvmlClocksEventReason*; formerly nvmlClocksThrottleReason*).
inline constexpr std::uint64_t reason_gpu_idle = 0x1;
inline constexpr std::uint64_t reason_applications_clocks = 0x2;
inline constexpr std::uint64_t reason_sw_power_cap = 0x4;
inline constexpr std::uint64_t reason_hw_slowdown = 0x8;
inline constexpr std::uint64_t reason_sync_boost = 0x10;
inline constexpr std::uint64_t reason_sw_thermal = 0x20;
inline constexpr std::uint64_t reason_hw_thermal = 0x40;
inline constexpr std::uint64_t reason_hw_power_brake = 0x80;
inline constexpr std::uint64_t reason_display_clocks = 0x100;
/// The reasons that mean the clocks were held down against the work (power, heat, a hardware
/// slowdown): a figure taken under them is not the device's. Idle, application clocks, sync
/// boost and display clocks are settings or rest, not throttling.
inline constexpr std::uint64_t throttle_reasons = reason_sw_power_cap | reason_hw_slowdown |
                                                  reason_sw_thermal | reason_hw_thermal |
                                                  reason_hw_power_brake;

/// The reasons set in `mask`, in words ("hw_thermal_slowdown"); unknown bits as "0x...".
[[nodiscard]] std::vector<std::string> reason_names(std::uint64_t mask);

/// One device as NVML shows it at one moment.
struct snapshot {
  int index = 0;
  std::optional<std::string> name, pci_bus_id;
  std::optional<unsigned> sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz, mem_clock_max_mhz;
  std::optional<std::uint64_t> clock_event_reasons;
  std::optional<double> power_w;
  std::optional<unsigned> temperature_c, pcie_gen, pcie_width, pcie_gen_max, pcie_width_max;
  std::optional<std::uint64_t> memory_used_bytes, memory_total_bytes;
};

/// Every NVML device now (`pinbench info`).
struct reading {
  bool available = false;
  std::string reason;  ///< why not, when not available
  std::string library;
  std::vector<std::string> missing;  ///< entry points the library lacks
  std::vector<snapshot> devices;
};
[[nodiscard]] reading read_all();

/// One NVML device watched around and during a case: snapshots, and the clock event reasons
/// seen by a thread polling them while the case runs. Thread-safe.
class watch {
 public:
  /// The device of that NVML index, or nullptr with why in `reason`.
  [[nodiscard]] static std::unique_ptr<watch> by_index(int index, std::string& reason);
  /// The device at that PCI bus id ("0000:17:00.0" or NVML's "00000000:17:00.0"), or nullptr.
  [[nodiscard]] static std::unique_ptr<watch> by_pci_bus_id(const std::string& bus_id,
                                                            std::string& reason);
  ~watch();
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;

  [[nodiscard]] int index() const noexcept { return index_; }
  /// Missing entry points of the library (their facts are null).
  [[nodiscard]] const std::vector<std::string>& missing() const noexcept { return lib_.missing; }
  [[nodiscard]] snapshot read() const;
  /// The clock event reasons now; 0 when NVML cannot say.
  [[nodiscard]] std::uint64_t reasons_now() const;

  /// Starts polling the reasons every `period_ms` (forgetting what was seen before); stop()
  /// ends it. Every reason seen since start() is in seen().
  void start(int period_ms);
  void stop();
  [[nodiscard]] std::uint64_t seen() const noexcept { return seen_.load(); }
  /// Begins a sample: forgets what was seen since the last mark.
  void mark() noexcept {
    generation_.fetch_add(1);
    since_mark_.store(0);
  }
  /// The reasons seen since mark(), including a read made now.
  [[nodiscard]] std::uint64_t since_mark();

 private:
  watch(const nvml_library& lib, nvml_device handle, int index);
  /// Adds a read begun while generation_ was `read_in`.
  void note(std::uint64_t reasons, std::uint64_t read_in) noexcept;

  const nvml_library& lib_;
  nvml_device handle_;
  int index_;
  std::atomic<std::uint64_t> seen_{0}, since_mark_{0};
  std::atomic<std::uint64_t> generation_{0};  // mark()s so far
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread poller_;
};

/// The ceiling of the device at `bus_id` from NVML's maximum PCIe generation and width: where
/// sysfs cannot tell (a container without /sys). None, with the reason, without NVML or a link.
[[nodiscard]] link_ceiling nvml_link_ceiling(const std::string& bus_id);

}  // namespace pinbench::device::telemetry
