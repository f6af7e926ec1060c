#include "kinds/transfer/transfer_verdict.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/units.hpp"
#include "kinds/transfer/transfer_params.hpp"

namespace pinbench::kinds::transfer {

namespace {

// A gap this wide between pinned and pageable is a difference in kind (the engine's semantics),
// not noise: below it the verdict says there is no clear difference rather than pick a side.
constexpr double clear_gap = 0.2;

struct point {
  const result::case_result* c = nullptr;
  std::optional<host_memory> memory;          ///< none: the result names no known memory
  std::map<std::string, std::string> others;  ///< every param but memory
  double bandwidth = 0;
  double bytes = 0;  ///< per copy
};

std::string pct(double fraction) {
  return fmt::format("{:.0f}%", fraction * 100);
}

// "32 MiB h2d", from the params the group shares.
std::string what(const point& p) {
  std::string d = format_bytes(static_cast<std::uint64_t>(p.bytes));
  if (const auto it = p.others.find("direction"); it != p.others.end()) d += " " + it->second;
  return d;
}

// The pinned case and the `other` one that differ in memory only, with the largest copies; the
// cases `with` a metric only.
std::optional<std::pair<const point*, const point*>> pair_with(const std::vector<point>& pts,
                                                               host_memory other,
                                                               const char* metric) {
  std::optional<std::pair<const point*, const point*>> best;
  for (const auto& pinned : pts) {
    if (pinned.memory != host_memory::pinned || !result::finite_median(*pinned.c, metric)) continue;
    for (const auto& q : pts) {
      if (q.memory != other || q.others != pinned.others || !result::finite_median(*q.c, metric))
        continue;
      if (!best || pinned.bytes > best->first->bytes) best.emplace(&pinned, &q);
    }
  }
  return best;
}

std::string caller_held(const point& pinned, const point& pageable) {
  const auto held = [](const point& p) {
    const double copy = *result::finite_median(*p.c, "copy_time");
    return copy > 0 ? *result::finite_median(*p.c, "host_call_time") / copy : 0.0;
  };
  const double a = held(pinned), b = held(pageable);
  return fmt::format(
      "non_blocking {}: the caller is held {} of a pinned copy, {} of a pageable "
      "one: {}",
      what(pinned), pct(a), pct(b),
      b - a >= clear_gap ? "only pinned memory leaves the host free" : "no clear difference here");
}

std::string overlap(const point& pinned, const point& pageable) {
  const double a = *result::finite_median(*pinned.c, "overlap");
  const double b = *result::finite_median(*pageable.c, "overlap");
  return fmt::format("compute hides {} of a pinned {} copy, {} of a pageable one: {}", pct(a),
                     what(pinned), pct(b),
                     a - b >= clear_gap ? "pin to overlap copies with compute"
                                        : "no clear gain from pinning here");
}

std::string on_the_fly(const point& pinned, const point& otf) {
  const double ratio = otf.bandwidth / pinned.bandwidth;
  std::string line = fmt::format("pin_on_the_fly {}: {:.2f} GB/s, {:.2f}x a pinned source's",
                                 what(pinned), otf.bandwidth, ratio);
  if (const auto pin = result::finite_median(*otf.c, "pin_time"))
    line += fmt::format(" ({} per copy spent pinning)", format_duration_ns(*pin));
  if (ratio <= 1 - clear_gap) line += ": pin the buffer once, not per copy";
  return line;
}

// "host backend" or the backend's name.
std::string where(device::platform_kind kind) {
  return kind == device::platform_kind::host ? std::string("host backend")
                                             : std::string(device::to_string(kind));
}

}  // namespace

std::string verdict(const result::scenario_result& s, device::platform_kind kind) {
  std::vector<point> pts;
  for (const auto& c : s.cases) {
    if (c.status != result::case_status::ok) continue;
    const auto bandwidth = result::finite_median(c, "bandwidth");
    if (!bandwidth || !result::finite_median(c, "copy_time") ||
        !result::finite_median(c, "host_call_time"))
      continue;
    point p;
    p.c = &c;
    p.others = result::flat_params(c.params);
    p.memory = memory_choice.find(p.others["memory"]);
    p.others.erase("memory");
    p.bandwidth = *bandwidth;
    p.bytes = c.extra.value("bytes_per_copy", 0.0);
    pts.push_back(std::move(p));
  }
  if (pts.empty()) return {};

  std::vector<std::string> parts;
  if (const auto with_compute = pair_with(pts, host_memory::pageable, "overlap")) {
    parts.push_back(overlap(*with_compute->first, *with_compute->second));
  } else {
    // Without compute: the caller's time, where the copies are asynchronous.
    std::vector<point> async;
    std::copy_if(pts.begin(), pts.end(), std::back_inserter(async), [](const point& p) {
      const auto mode = p.others.find("mode");  // absent: the kind's default
      return (mode == p.others.end() ? mode_choice.default_value()
                                     : mode_choice.find(mode->second)) == copy_mode::non_blocking;
    });
    if (const auto held = pair_with(async, host_memory::pageable, "host_call_time"))
      parts.push_back(caller_held(*held->first, *held->second));
  }
  if (const auto otf = pair_with(pts, host_memory::pin_on_the_fly, "bandwidth"))
    parts.push_back(on_the_fly(*otf->first, *otf->second));
  if (parts.empty()) {
    const auto fastest =
        std::max_element(pts.begin(), pts.end(),
                         [](const point& a, const point& b) { return a.bandwidth < b.bandwidth; });
    parts.push_back(fmt::format("fastest: {} at {:.2f} GB/s",
                                fastest->c->id.empty() ? std::string("default") : fastest->c->id,
                                fastest->bandwidth));
  }
  std::string line;
  for (const auto& part : parts) line += (line.empty() ? "" : "; ") + part;
  return line + " (" + where(kind) + ")";
}

}  // namespace pinbench::kinds::transfer
