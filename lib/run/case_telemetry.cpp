#include "run/case_telemetry.hpp"

#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "run/telemetry_json.hpp"

namespace pinbench::run {

namespace telemetry = device::telemetry;

namespace {

// Often enough to catch a throttle spell of a short case, rarely enough to cost nothing.
constexpr int poll_period_ms = 50;

std::string throttle_words(std::uint64_t mask) {
  return fmt::format("{}",
                     fmt::join(telemetry::reason_names(mask & telemetry::throttle_reasons), ", "));
}

}  // namespace

class case_telemetry::guard final : public measure::sample_guard {
 public:
  explicit guard(telemetry::watch& w) : watch_(w) {}
  void sample_starting() override { watch_.mark(); }
  std::string spoiled() override {
    const std::uint64_t throttled = watch_.since_mark() & telemetry::throttle_reasons;
    return throttled != 0 ? throttle_words(throttled) : std::string();
  }
  void discarded() override { ++count; }
  void kept_spoiled() override { ++kept; }
  int count = 0, kept = 0;

 private:
  telemetry::watch& watch_;
};

std::optional<telemetry_device_choice> parse_telemetry_device(std::string_view text) {
  using what = telemetry_device_choice::what;
  if (text == "auto") return telemetry_device_choice{what::automatic};
  if (text == "off") return telemetry_device_choice{what::off};
  int index = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || index < 0)
    return std::nullopt;
  return telemetry_device_choice{what::index, index};
}

case_telemetry::case_telemetry(device::backend& dev, const std::string& which,
                               bool discard_on_throttle)
    : discard_(discard_on_throttle) {
  const auto choice = parse_telemetry_device(which);
  if (!choice)
    throw input_error(fmt::format(
        "--telemetry-device: expected auto, off or an NVML device index, got \"{}\"", which));
  using what = telemetry_device_choice::what;
  if (choice->kind == what::off) {
    reason_ = "turned off (--telemetry-device off)";
  } else if (choice->kind == what::automatic) {
    if (dev.emulated()) {
      reason_ = "host backend: no GPU is watched (--telemetry-device N watches NVML device N)";
    } else if (const auto bus_id = dev.describe().pci_bus_id) {
      asked_ = true;
      watch_ = telemetry::watch::by_pci_bus_id(*bus_id, reason_);
    } else {
      asked_ = true;
      reason_ = "the device's PCI bus id is unknown";
    }
  } else {
    asked_ = true;
    watch_ = telemetry::watch::by_index(choice->index, reason_);
  }
  if (watch_ && discard_) guard_ = std::make_unique<guard>(*watch_);
}

std::string case_telemetry::unwatched_warning() const {
  if (watch_ || !asked_) return {};
  return "no GPU telemetry (clocks, throttling) in this run: " + reason_;
}

case_telemetry::~case_telemetry() {
  installed_.reset();
  if (watch_) watch_->stop();
}

void case_telemetry::begin() {
  if (!watch_) return;
  before_ = watch_->read();
  watch_->start(poll_period_ms);
  if (guard_) {
    guard_->count = guard_->kept = 0;
    installed_.emplace(*guard_);
  }
}

void case_telemetry::end(result::case_result& r) {
  if (!watch_) {
    r.extra["telemetry"] = {{"available", false}, {"reason", reason_}};
    return;
  }
  installed_.reset();
  watch_->stop();
  const auto after = watch_->read();
  std::uint64_t seen = watch_->seen() | after.clock_event_reasons.value_or(0);
  if (before_) seen |= before_->clock_event_reasons.value_or(0);
  const bool throttled = (seen & telemetry::throttle_reasons) != 0;
  const int discarded = guard_ ? guard_->count : 0;
  r.extra["telemetry"] = {{"device", watch_->index()},
                          {"before", before_ ? telemetry_json(*before_) : nlohmann::json()},
                          {"after", telemetry_json(after)},
                          {"reasons_seen", telemetry::reason_names(seen)},
                          {"throttled", throttled},
                          {"discarded_samples", discarded}};
  if (!watch_->missing().empty()) r.extra["telemetry"]["missing"] = watch_->missing();
  if (throttled) {
    // One warning: what was seen, what was discarded, and whether throttled samples remain.
    const int kept = guard_ ? guard_->kept : 0;
    std::string what;
    if (!guard_)
      what = "its figures may read low (--discard-on-throttle takes such samples again)";
    else if (kept > 0)
      what = fmt::format(
          "{} samples taken under it were discarded and taken again, then {} "
          "more were kept (it stayed throttled): its figures may read low",
          discarded, kept);
    else if (discarded > 0)
      what = fmt::format("{} samples taken under it were discarded and taken again", discarded);
    else
      what = "no sample was taken under it (before or after the samples)";
    r.warnings.push_back(fmt::format("GPU {}'s clocks were throttled during the case ({}): {}",
                                     watch_->index(), throttle_words(seen), what));
  }
  before_.reset();
}

}  // namespace pinbench::run
