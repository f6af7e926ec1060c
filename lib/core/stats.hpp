// Summary statistics of raw samples, as every result and table reports them.
#pragma once

#include <cstddef>
#include <span>

#include <nlohmann/json_fwd.hpp>

namespace pinbench {

struct summary {
  std::size_t n = 0;
  double median = 0, mean = 0, min = 0, max = 0, q1 = 0, q3 = 0, stdev = 0;

  /// Relative standard deviation (stdev / mean); 0 when n < 2 or mean is 0.
  [[nodiscard]] double rel_stdev() const noexcept;
};

/// Quartiles by linear interpolation between order statistics (type 7, as numpy's default).
/// stdev is the sample standard deviation (n - 1). An empty span gives n = 0 and zeros.
[[nodiscard]] summary summarize(std::span<const double> samples);

/// The value at quantile q (0..1) of already sorted samples, type 7.
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);

void to_json(nlohmann::json& j, const summary& s);
void from_json(const nlohmann::json& j, summary& s);

}  // namespace pinbench
