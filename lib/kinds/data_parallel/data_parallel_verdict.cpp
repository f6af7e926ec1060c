#include "kinds/data_parallel/data_parallel_verdict.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/units.hpp"
#include "kinds/data_parallel/data_parallel_params.hpp"

namespace pinbench::kinds::data_parallel {

namespace {

struct point {
  const result::case_result* c = nullptr;
  std::optional<parallel_mode> mode;          ///< none: the result names no known mode
  std::map<std::string, std::string> others;  ///< every param but mode
  double samples_per_s = 0;
  double extra_bytes = 0;
  std::optional<double> overlap;
};

std::string bytes(double v) {
  return format_bytes(static_cast<std::uint64_t>(std::max(v, 0.0)));
}

// "host backend, 2 emulated devices" / "cuda, 4 devices": the platform and the devices the
// case drove.
std::string where(const result::case_result& c, device::platform_kind kind) {
  const int devices = c.extra.value("devices", 0);
  if (kind == device::platform_kind::host)
    return fmt::format("host backend, {} emulated devices", devices);
  return fmt::format("{}, {} devices", device::to_string(kind), devices);
}

}  // namespace

std::string verdict(const result::scenario_result& s, device::platform_kind kind) {
  std::vector<point> pts;
  for (const auto& c : s.cases) {
    if (c.status != result::case_status::ok) continue;
    const auto sps = result::finite_median(c, "samples_per_s");
    if (!sps) continue;
    point p;
    p.c = &c;
    p.others = result::flat_params(c.params);
    p.mode = mode_choice.find(p.others["mode"]);
    p.others.erase("mode");
    p.samples_per_s = *sps;
    p.extra_bytes = result::finite_median(c, "device0_extra_memory").value_or(0);
    p.overlap = result::finite_median(c, "comm_overlap");
    pts.push_back(std::move(p));
  }
  if (pts.empty()) return {};

  // ddp against the dp case that differs from it in mode only.
  std::vector<std::pair<const point*, const point*>> pairs;
  for (const auto& ddp : pts) {
    if (ddp.mode != parallel_mode::ddp) continue;
    const auto dp = std::find_if(pts.begin(), pts.end(), [&](const point& q) {
      return q.mode == parallel_mode::dp && q.others == ddp.others;
    });
    if (dp != pts.end()) pairs.emplace_back(&*dp, &ddp);
  }

  if (pairs.size() == 1) {
    const auto& [dp, ddp] = pairs.front();
    std::string line = fmt::format(
        "ddp: {:.2f}x the samples/s of dp ({}); dp's device 0 peaks {} above the others, ddp's {}",
        ddp->samples_per_s / dp->samples_per_s, where(*ddp->c, kind), bytes(dp->extra_bytes),
        bytes(ddp->extra_bytes));
    if (ddp->overlap)
      line += fmt::format("; backward hid {:.0f}% of ddp's all-reduce time", *ddp->overlap * 100);
    return line;
  }
  if (pairs.size() > 1) {
    double lo = 0, hi = 0, dp_extra = 0, ddp_extra = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const double ratio = pairs[i].second->samples_per_s / pairs[i].first->samples_per_s;
      lo = i == 0 ? ratio : std::min(lo, ratio);
      hi = i == 0 ? ratio : std::max(hi, ratio);
      dp_extra = std::max(dp_extra, pairs[i].first->extra_bytes);
      ddp_extra = std::max(ddp_extra, pairs[i].second->extra_bytes);
    }
    return fmt::format(
        "ddp: {:.2f}x to {:.2f}x the samples/s of dp over {} pairs of cases ({}); dp's device 0 "
        "peaks up to {} above the others, ddp's up to {}",
        lo, hi, pairs.size(), where(*pairs.front().second->c, kind), bytes(dp_extra),
        bytes(ddp_extra));
  }
  const auto fastest = std::max_element(pts.begin(), pts.end(), [](const point& a, const point& b) {
    return a.samples_per_s < b.samples_per_s;
  });
  return fmt::format("fastest: {} at {:.0f} samples/s ({}); device 0 peaks {} above the others",
                     fastest->c->id, fastest->samples_per_s, where(*fastest->c, kind),
                     bytes(fastest->extra_bytes));
}

}  // namespace pinbench::kinds::data_parallel
