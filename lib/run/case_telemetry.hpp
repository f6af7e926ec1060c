// Telemetry around every case of a run: the watched GPU's NVML snapshot before and after, the
// clock event reasons polled while the case runs, a warning when the clocks were throttled, and
// (run --discard-on-throttle) the sample guard that has samples taken under throttling retaken.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "device/backend.hpp"
#include "device/telemetry/telemetry.hpp"
#include "measure/sample_guard.hpp"
#include "result/result.hpp"

namespace pinbench::run {

/// `run --telemetry-device`: auto, off, or an NVML device index.
struct telemetry_device_choice {
  enum class what { automatic, off, index } kind = what::automatic;
  int index = -1;
};
/// The choice `text` names; nothing for any other text (the caller says what was expected).
[[nodiscard]] std::optional<telemetry_device_choice> parse_telemetry_device(std::string_view text);

class case_telemetry {
 public:
  /// `which` (run --telemetry-device): "auto" watches the CUDA backend's own device (the NVML
  /// device at its PCI bus id) and nothing on the host backend; "off" nothing; "N" NVML device
  /// N. Throws input_error for anything else. A device that cannot be watched is no failure:
  /// every case then records why.
  case_telemetry(device::backend& dev, const std::string& which, bool discard_on_throttle);
  ~case_telemetry();
  case_telemetry(const case_telemetry&) = delete;
  case_telemetry& operator=(const case_telemetry&) = delete;

  /// Before a case: the snapshot, the poller, the guard.
  void begin();
  /// After it: r.extra["telemetry"] ({device, before, after, reasons_seen, throttled,
  /// discarded_samples} or {available: false, reason}) and the throttle warning.
  void end(result::case_result& r);

  /// For the run's warnings: why the GPU asked for (an index, or auto on a GPU backend) is not
  /// watched; "" when it is, or when none was asked for (off, auto on the host backend).
  [[nodiscard]] std::string unwatched_warning() const;

 private:
  class guard;
  std::unique_ptr<device::telemetry::watch> watch_;
  std::string reason_;  // why nothing is watched
  bool asked_ = false;  // a GPU was asked for: not watching it is worth a run warning
  bool discard_;
  std::optional<device::telemetry::snapshot> before_;
  std::unique_ptr<guard> guard_;
  std::optional<measure::scoped_sample_guard> installed_;
};

}  // namespace pinbench::run
