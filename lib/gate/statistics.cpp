// Bootstrap, Mann-Whitney U and noise for `pinbench compare`; see statistics.hpp.
#include "gate/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <utility>

namespace pinbench::gate {

namespace {

// The median of a scratch buffer, reordering it (no copy: the bootstrap calls this 4000 times).
double median_in_place(std::vector<double>& v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  // After nth_element everything before `mid` is <= upper: the lower middle is their maximum.
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

// Type-7 quantile of sorted values that may hold +inf (interpolating inf - inf would give NaN).
double quantile_with_inf(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || sorted[lo] == sorted[hi]) return sorted[lo];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// Two-sided exact p-value of the rank sum of `k` items drawn from items with the given doubled
// midrank scores, all C(N, k) subsets being equally likely (the permutation distribution given
// the ties). counts[j][s] = number of j-subsets of the items seen so far with score sum s.
double exact_rank_sum_p(const std::vector<std::int64_t>& scores, std::size_t k,
                        std::int64_t observed) {
  const std::size_t n = scores.size();
  std::vector<std::int64_t> sorted = scores;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  std::int64_t max_sum = 0;
  for (std::size_t i = 0; i < k; ++i) max_sum += sorted[i];
  const auto width = static_cast<std::size_t>(max_sum) + 1;
  std::vector<std::vector<double>> counts(k + 1, std::vector<double>(width, 0.0));
  counts[0][0] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const auto w = static_cast<std::size_t>(scores[i]);
    for (std::size_t j = std::min(i + 1, k); j >= 1; --j) {
      const auto& from = counts[j - 1];
      auto& to = counts[j];
      for (std::size_t s = 0; s + w < width; ++s) to[s + w] += from[s];
    }
  }
  // Doubled scores: the mean of the doubled rank sum is k (N + 1).
  const auto mean = static_cast<std::int64_t>(k * (n + 1));
  const std::int64_t distance = std::llabs(observed - mean);
  double total = 0, tail = 0;
  for (std::size_t s = 0; s < width; ++s) {
    const double c = counts[k][s];
    if (c == 0) continue;
    total += c;
    if (std::llabs(static_cast<std::int64_t>(s) - mean) >= distance) tail += c;
  }
  return total > 0 ? std::min(1.0, tail / total) : 1.0;
}

}  // namespace

std::uint64_t rng::next() noexcept {
  state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

std::uint64_t rng::below(std::uint64_t bound) noexcept {
  // Values below `threshold` would make the low residues more likely: draw again.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t r = next();
    if (r >= threshold) return r % bound;
  }
}

double rng::uniform() noexcept {
  return static_cast<double>(next() >> 11U) * 0x1.0p-53;
}

std::uint64_t row_seed(std::uint64_t seed, std::string_view key) noexcept {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (char ch : key) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001B3ULL;
  }
  rng mix(seed ^ h);
  return mix.next();
}

double median(std::span<const double> samples) {
  std::vector<double> v(samples.begin(), samples.end());
  return median_in_place(v);
}

double relative_noise(std::span<const double> samples) {
  if (samples.size() < 2) return 0;
  const double m = median(samples);
  if (m == 0) return 0;
  std::vector<double> deviations;
  deviations.reserve(samples.size());
  for (double x : samples) deviations.push_back(std::fabs(x - m));
  // 1.4826 = 1 / Phi^-1(3/4): scales the MAD to the standard deviation of normal data.
  return 1.4826 * median_in_place(deviations) / std::fabs(m);
}

namespace {

// One draw of the two-level bootstrap: rounds with replacement, then samples within them.
double resampled_median(const round_samples& side, std::vector<double>& scratch, rng& g) {
  scratch.clear();
  for (std::size_t r = 0; r < side.size(); ++r) {
    // One round: no draw, so that the stream (and the interval) is the one-level bootstrap's.
    const auto& round = side.size() == 1 ? side.front() : side[g.below(side.size())];
    for (std::size_t i = 0; i < round.size(); ++i) scratch.push_back(round[g.below(round.size())]);
  }
  return median_in_place(scratch);
}

}  // namespace

interval bootstrap_ratio_of_medians(const round_samples& base, const round_samples& current,
                                    double confidence, std::size_t resamples, std::uint64_t seed) {
  rng g(seed);
  std::vector<double> scratch, ratios;
  ratios.reserve(resamples);
  for (std::size_t i = 0; i < resamples; ++i) {
    const double b = resampled_median(base, scratch, g);
    const double c = resampled_median(current, scratch, g);
    if (b != 0)
      ratios.push_back(c / b);
    else
      ratios.push_back(c == 0 ? 1.0 : std::numeric_limits<double>::infinity());
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  return {quantile_with_inf(ratios, tail), quantile_with_inf(ratios, 1 - tail)};
}

interval bootstrap_ratio_of_medians(std::span<const double> base, std::span<const double> current,
                                    double confidence, std::size_t resamples, std::uint64_t seed) {
  // One round a side: the two-level bootstrap draws no round, so this is the plain bootstrap.
  const round_samples b{std::vector<double>(base.begin(), base.end())};
  const round_samples c{std::vector<double>(current.begin(), current.end())};
  return bootstrap_ratio_of_medians(b, c, confidence, resamples, seed);
}

spread between_round_noise(const round_samples& base, const round_samples& current) {
  double squares = 0;  // sum of squared relative deviations of round medians from their side's mean
  std::size_t freedom = 0;
  for (const auto* side : {&base, &current}) {
    if (side->size() < 2) continue;
    std::vector<double> medians;
    for (const auto& round : *side) medians.push_back(median(round));
    double mean = 0;
    for (double m : medians) mean += m;
    mean /= static_cast<double>(medians.size());
    if (mean == 0) return {};
    for (double m : medians) squares += (m / mean - 1) * (m / mean - 1);
    freedom += medians.size() - 1;
  }
  if (freedom == 0) return {};
  return {std::sqrt(squares / static_cast<double>(freedom)), freedom};
}

namespace {

// Regularized lower incomplete gamma P(a, x) by its power series: converges for every x, fast
// for the x below the mean that the lower tail needs.
double lower_gamma_regularized(double a, double x) {
  if (x <= 0) return 0;
  double term = 1 / a, sum = term;
  for (int n = 1; n < 1000 && term > sum * 1e-15; ++n) {
    term *= x / (a + n);
    sum += term;
  }
  return std::min(1.0, sum * std::exp(a * std::log(x) - x - std::lgamma(a)));
}

}  // namespace

double chi_square_quantile(double p, std::size_t freedom) {
  // The CDF is P(f/2, x/2); the p-quantile for p <= 1/2 lies below the mean f: bisect there.
  const double half = static_cast<double>(freedom) / 2;
  double lo = 0, hi = static_cast<double>(freedom);
  while (lower_gamma_regularized(half, hi / 2) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > hi * 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    (lower_gamma_regularized(half, mid / 2) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double spread_upper_bound(spread s, double confidence) {
  if (s.freedom == 0 || s.relative == 0) return s.relative;
  const auto f = static_cast<double>(s.freedom);
  return s.relative * std::sqrt(f / chi_square_quantile(1 - confidence, s.freedom));
}

u_test mann_whitney(std::span<const double> a, std::span<const double> b, std::size_t exact_limit) {
  const std::size_t m = a.size(), n = b.size(), total = m + n;
  std::vector<std::pair<double, bool>> all;  // (value, from a)
  all.reserve(total);
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });

  // Doubled midranks keep every rank sum an integer: a tie over ranks i+1..j+1 scores i+j+2.
  std::vector<std::int64_t> scores(total);
  std::int64_t rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over tie groups
  for (std::size_t i = 0; i < total;) {
    std::size_t j = i;
    while (j + 1 < total && all[j + 1].first == all[i].first) ++j;
    const auto score = static_cast<std::int64_t>(i + j + 2);
    for (std::size_t k = i; k <= j; ++k) {
      scores[k] = score;
      if (all[k].second) rank_sum_a += score;
    }
    const auto t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    i = j + 1;
  }

  const auto md = static_cast<double>(m), nd = static_cast<double>(n);
  u_test r;
  r.u = static_cast<double>(rank_sum_a) / 2 - md * (md + 1) / 2;
  if (total <= exact_limit) {
    r.exact = true;
    // Count subsets of the smaller side: fewer states, the same two-sided p-value.
    const bool a_smaller = m <= n;
    const std::size_t k = a_smaller ? m : n;
    const auto all_ranks = static_cast<std::int64_t>(total * (total + 1));
    r.p_value = exact_rank_sum_p(scores, k, a_smaller ? rank_sum_a : all_ranks - rank_sum_a);
    return r;
  }
  const double nn = md + nd;
  const double variance = md * nd / 12 * ((nn + 1) - tie_term / (nn * (nn - 1)));
  if (variance <= 0) return r;  // every value equal: no evidence of a shift
  const double z = std::max(0.0, std::fabs(r.u - md * nd / 2) - 0.5) / std::sqrt(variance);
  r.p_value = std::min(1.0, std::erfc(z / std::numbers::sqrt2));
  return r;
}

}  // namespace pinbench::gate
