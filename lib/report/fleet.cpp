// Fleet outliers: each rank's median against the median of all ranks, in MADs.
#include "report/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/units.hpp"
#include "kinds/registry.hpp"
#include "report/layout.hpp"

namespace pinbench::report {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The metrics a fleet is judged on: the kind's headline columns, else every directed metric.
std::vector<std::string> judged_metrics(const result::scenario_result& s,
                                        const result::case_result& c) {
  std::vector<std::string> out;
  if (const auto* k = kinds::find(s.kind); k != nullptr)
    for (const auto& h : k->headlines) out.push_back(h.metric);
  if (out.empty())
    for (const auto& m : c.metrics)
      if (m.better != result::direction::none) out.push_back(m.name);
  return out;
}

std::string rank_field(const result::run_result& r, int rank, const char* key) {
  if (!r.ranks.is_array()) return {};
  for (const auto& e : r.ranks)
    if (e.value("rank", -1) == rank) {
      if (std::string(key) == "device") {
        const auto& d = e.value("device", nlohmann::json::object());
        std::string name = d.value("name", "");
        if (d.contains("index")) name += fmt::format(" #{}", d["index"].get<int>());
        return name;
      }
      return e.value(key, "");
    }
  return {};
}

}  // namespace

std::vector<fleet_outlier> fleet_outliers(const result::run_result& r) {
  std::vector<fleet_outlier> out;
  for (const auto& s : r.scenarios) {
    // Cases by id without the rank, in the order first seen.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const result::case_result*>> by_case;
    for (const auto& c : s.cases) {
      if (!c.rank || c.status != result::case_status::ok) continue;
      const std::string id(result::id_without_rank(c));
      if (!by_case.contains(id)) order.push_back(id);
      by_case[id].push_back(&c);
    }
    for (const auto& id : order) {
      const auto& cases = by_case[id];
      if (cases.size() < 3) continue;
      for (const auto& name : judged_metrics(s, *cases.front())) {
        std::vector<std::pair<const result::case_result*, double>> medians;
        std::string unit;
        for (const auto* c : cases)
          if (const auto* m = c->find(name); m != nullptr && !m->samples.empty()) {
            const auto sum = result::finite_summary(*m);
            if (sum.n == 0) continue;
            medians.emplace_back(c, sum.median);
            unit = m->unit;
          }
        if (medians.size() < 3) continue;
        std::vector<double> values;
        values.reserve(medians.size());
        for (const auto& [c, v] : medians) values.push_back(v);
        const double fleet = median_of(values);
        std::vector<double> deviations;
        deviations.reserve(values.size());
        for (const double v : values) deviations.push_back(std::abs(v - fleet));
        const double mad = median_of(deviations);
        for (const auto& [c, v] : medians) {
          const double distance = std::abs(v - fleet);
          if (distance < outlier_min_relative * std::abs(fleet)) continue;
          const double z =
              mad > 0 ? 0.6745 * distance / mad : std::numeric_limits<double>::infinity();
          if (z <= outlier_z) continue;
          out.push_back({s.name, id, name, unit, *c->rank, rank_field(r, *c->rank, "host"),
                         rank_field(r, *c->rank, "device"), v, fleet,
                         mad > 0 ? distance / mad : std::numeric_limits<double>::infinity()});
        }
      }
    }
  }
  return out;
}

std::string describe(const fleet_outlier& o) {
  std::string where = o.host;
  if (!o.device.empty()) where += (where.empty() ? "" : ", ") + o.device;
  const double relative = o.fleet_median != 0 ? (o.value - o.fleet_median) / o.fleet_median : 0;
  const std::string distance = std::isfinite(o.mads) ? fmt::format("{:.1f} MADs", o.mads) : "MAD 0";
  return fmt::format("rank {}{}: {} {} {}, fleet median {} ({:+.0f}%, {})", o.rank,
                     where.empty() ? "" : " (" + where + ")", o.case_id, o.metric,
                     format_value(o.value, o.unit, unit_place::in_cell),
                     format_value(o.fleet_median, o.unit, unit_place::in_cell), relative * 100,
                     distance);
}

}  // namespace pinbench::report
