// The statistics behind `pinbench compare`: a seeded bootstrap of the ratio of medians, the
// Mann-Whitney U test and a robust noise estimate. Deterministic: same input and seed, same output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace pinbench::gate {

/// A small deterministic generator (splitmix64). The standard library's distributions differ
/// between implementations; this one gives the same stream everywhere, so goldens stay stable.
class rng {
 public:
  explicit rng(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept;
  /// Uniform in [0, bound) without modulo bias (rejection); bound > 0.
  std::uint64_t below(std::uint64_t bound) noexcept;
  /// Uniform in [0, 1).
  double uniform() noexcept;

 private:
  std::uint64_t state_;
};

/// A seed for one comparison row from the run's seed and the row's name (FNV-1a, then mixed),
/// so that a row's interval does not depend on which other rows are compared.
[[nodiscard]] std::uint64_t row_seed(std::uint64_t seed, std::string_view key) noexcept;

/// The median (type 7: the mean of the two middle values for even n); 0 for no samples.
[[nodiscard]] double median(std::span<const double> samples);

/// Robust relative noise: 1.4826 x MAD / |median| (a standard deviation estimate for normal
/// data that one outlier does not inflate). 0 when n < 2 or the median is 0.
[[nodiscard]] double relative_noise(std::span<const double> samples);

struct interval {
  double lo = 0, hi = 0;
};

/// Percentile bootstrap interval of median(current) / median(base): each resample draws both
/// sides with replacement at their own sizes. A resample whose base median is 0 gives a ratio
/// of 1 when its current median is 0 too, else +inf. Both sides non-empty; resamples >= 1.
[[nodiscard]] interval bootstrap_ratio_of_medians(std::span<const double> base,
                                                  std::span<const double> current,
                                                  double confidence, std::size_t resamples,
                                                  std::uint64_t seed);

/// Samples grouped by the round they were measured in (`run --repeat`, or one result file of
/// several): each inner vector one round, none empty.
using round_samples = std::vector<std::vector<double>>;

/// The two-level bootstrap of Kalibera and Jones: each resample draws a side's rounds with
/// replacement, then samples with replacement within each drawn round, and takes the median of
/// what it drew. The interval then widens with the spread between rounds (what differs from run
/// to run: clock, placement, neighbours), which resampling pooled samples cannot see. With one
/// round a side it is the one-level bootstrap above. Both sides non-empty; resamples >= 1.
[[nodiscard]] interval bootstrap_ratio_of_medians(const round_samples& base,
                                                  const round_samples& current, double confidence,
                                                  std::size_t resamples, std::uint64_t seed);

/// A relative spread and the degrees of freedom it was estimated with.
struct spread {
  double relative = 0;
  std::size_t freedom = 0;
};

/// Relative spread between rounds: the standard deviation of the round medians over their mean,
/// each side taken around its own mean and the two pooled (so a shift between the sides is not
/// noise); freedom = rounds - 1 summed over the sides. 0 when neither side has two rounds or a
/// mean is 0.
[[nodiscard]] spread between_round_noise(const round_samples& base, const round_samples& current);

/// The one-sided upper confidence bound of a standard deviation estimated with `freedom`
/// degrees of freedom (chi-square: s * sqrt(f / chi2_{1-confidence}(f))). Three rounds a side
/// give 4 degrees of freedom, and a spread that small a count shows may be 2.4 times larger at
/// 95%: a floor taken from the estimate alone lets runs that drift together pass for a change.
/// 0 freedom gives the estimate back.
[[nodiscard]] double spread_upper_bound(spread s, double confidence);

/// The p-quantile of the chi-square distribution with `freedom` >= 1 degrees of freedom
/// (0 < p < 1), by bisection on its distribution function.
[[nodiscard]] double chi_square_quantile(double p, std::size_t freedom);

/// Two-sided Mann-Whitney U (Wilcoxon rank-sum) test.
struct u_test {
  double u = 0;        ///< U of the first sample: pairs (a, b) with a > b, ties counting 1/2
  double p_value = 1;  ///< two-sided
  bool exact = false;  ///< exact permutation distribution (else normal approximation)
};

/// Up to `exact_limit` samples in all, the p-value is exact: the permutation distribution of
/// the rank sum given the ties (midranks), counted by dynamic programming. Beyond, the normal
/// approximation with tie correction of the variance and a continuity correction of 0.5.
/// All values equal gives p = 1. Both sides non-empty.
[[nodiscard]] u_test mann_whitney(std::span<const double> a, std::span<const double> b,
                                  std::size_t exact_limit = 40);

}  // namespace pinbench::gate
