#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench {

double summary::rel_stdev() const noexcept {
  if (n < 2 || mean == 0) return 0;
  return stdev / std::fabs(mean);
}

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

summary summarize(std::span<const double> samples) {
  summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = quantile_sorted(v, 0.5);
  s.q1 = quantile_sorted(v, 0.25);
  s.q3 = quantile_sorted(v, 0.75);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  return s;
}

void to_json(nlohmann::json& j, const summary& s) {
  j = nlohmann::json{{"n", s.n},     {"median", s.median}, {"mean", s.mean}, {"min", s.min},
                     {"max", s.max}, {"q1", s.q1},         {"q3", s.q3},     {"stdev", s.stdev}};
}

void from_json(const nlohmann::json& j, summary& s) {
  s.n = j.value("n", std::size_t{0});
  s.median = j.value("median", 0.0);
  s.mean = j.value("mean", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  s.q1 = j.value("q1", 0.0);
  s.q3 = j.value("q3", 0.0);
  s.stdev = j.value("stdev", 0.0);
}

}  // namespace pinbench
