// A snapshot's recording in words (alloc/recording.hpp).
#include "alloc/recording.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/units.hpp"

namespace pinbench::alloc {

std::string_view to_string(decision_kind k) noexcept {
  switch (k) {
    case decision_kind::segment_alloc:
      return "segment_alloc";
    case decision_kind::segment_free:
      return "segment_free";
    case decision_kind::segment_map:
      return "segment_map";
    case decision_kind::segment_unmap:
      return "segment_unmap";
    case decision_kind::oom:
      return "oom";
  }
  return "?";
}

std::uint64_t start_state::reserved_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const auto& s : segments) total += s.size;
  return total;
}

std::uint64_t start_state::live_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const auto& s : segments)
    for (const auto& b : s.live) total += b.size;
  return total;
}

std::size_t start_state::live_blocks() const noexcept {
  std::size_t n = 0;
  for (const auto& s : segments) n += s.live.size();
  return n;
}

std::vector<std::uint64_t> start_state::reservations() const {
  std::vector<std::uint64_t> out;
  for (const auto& s : segments)
    if (s.expandable && std::find(out.begin(), out.end(), s.reservation) == out.end())
      out.push_back(s.reservation);
  return out;
}

std::string event_location(std::uint64_t event, int device, std::optional<std::uint64_t> entry) {
  if (entry) return fmt::format("events[{}] (device_traces[{}][{}])", event, device, *entry);
  return fmt::format("events[{}]", event);
}

std::string recording::where(std::uint64_t event) const {
  return event_location(event, device,
                        event < entries.size() ? std::optional{entries[event]} : std::nullopt);
}

std::uint64_t recording::device_calls() const noexcept {
  return static_cast<std::uint64_t>(
      std::count_if(decisions.begin(), decisions.end(),
                    [](const recorded_decision& d) { return is_device_call(d.decision.kind); }));
}

namespace {

std::string said(const std::optional<allocator_decision>& d) {
  if (!d) return "nothing";
  if (d->kind == decision_kind::oom)
    return fmt::format("oom of {} on stream {}", format_bytes(d->size), d->stream);
  return fmt::format("{} of {} at {:#x} on stream {}", to_string(d->kind), format_bytes(d->size),
                     d->address, d->stream);
}

}  // namespace

std::string divergence::describe() const {
  return fmt::format("{}: PyTorch made {}, pinbench {}", event_location(event, device, entry),
                     said(pytorch), said(pinbench));
}

std::string decision_check::summary() const {
  std::string text;
  if (reproduced()) {
    text = fmt::format("PyTorch's {} cudaMalloc/cudaFree decision{} reproduced exactly", pytorch,
                       pytorch == 1 ? "" : "s");
  } else {
    text = fmt::format("{} of PyTorch's {} cudaMalloc/cudaFree decisions reproduced, then {}",
                       identical, pytorch, first ? first->describe() : std::string("?"));
  }
  if (first_placement)
    text += fmt::format(
        " (the first block placed elsewhere: events[{}], {} at {:#x}, PyTorch's at "
        "{:#x})",
        first_placement->event, format_bytes(first_placement->size), first_placement->pinbench,
        first_placement->pytorch);
  std::vector<std::string> how;
  if (start_segments > 0)
    how.push_back(fmt::format("from the recorded start state ({} segment{}, {} live block{})",
                              start_segments, start_segments == 1 ? "" : "s", start_blocks,
                              start_blocks == 1 ? "" : "s"));
  if (empty_cache_calls > 0)
    how.push_back(fmt::format("{} empty_cache() call{} taken from the trace", empty_cache_calls,
                              empty_cache_calls == 1 ? "" : "s"));
  if (forced_failures > 0)
    how.push_back(fmt::format("{} cudaMalloc failure{} where PyTorch's failed", forced_failures,
                              forced_failures == 1 ? "" : "s"));
  for (std::size_t i = 0; i < how.size(); ++i) text += (i == 0 ? "; " : ", ") + how[i];
  if (!reproduced() && device_bytes < pytorch_peak_reserved)
    text += fmt::format(
        ". The replay's device of {} is smaller than the {} PyTorch reserved: it "
        "cannot follow PyTorch that far (give the GPU's memory)",
        format_bytes(device_bytes), format_bytes(pytorch_peak_reserved));
  return text;
}

}  // namespace pinbench::alloc
