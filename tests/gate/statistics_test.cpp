// The statistics of compare: generator, median, noise, bootstrap interval, Mann-Whitney U.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "fixtures.hpp"
#include "gate/statistics.hpp"

using namespace pinbench;
using pinbench::testing::synthetic;

namespace {

// The two-sided p-value by enumerating every split of the pooled values (midranks for ties).
double brute_force_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const std::size_t n = all.size(), m = a.size();
  std::vector<double> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const auto midrank = [&](double x) {
    const auto lo = std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
    const auto hi = std::upper_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
    return static_cast<double>(lo + 1 + hi) / 2;  // mean of ranks lo+1 .. hi
  };
  double observed = 0;
  for (std::size_t i = 0; i < m; ++i) observed += midrank(all[i]);
  const double mean = static_cast<double>(m) * static_cast<double>(n + 1) / 2;
  std::size_t hits = 0, total = 0;
  for (unsigned mask = 0; mask < (1U << n); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) != m) continue;
    double w = 0;
    for (std::size_t i = 0; i < n; ++i)
      if ((mask >> i) & 1U) w += midrank(all[i]);
    ++total;
    if (std::fabs(w - mean) >= std::fabs(observed - mean) - 1e-9) ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(total);
}

}  // namespace

TEST_CASE("the generator is deterministic and unbiased in range", "[gate][statistics]") {
  gate::rng a(42), b(42), c(43);
  std::vector<std::uint64_t> sa, sb, sc;
  for (int i = 0; i < 5; ++i) {
    sa.push_back(a.next());
    sb.push_back(b.next());
    sc.push_back(c.next());
  }
  CHECK(sa == sb);
  CHECK(sa != sc);
  gate::rng g(7);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    const auto v = g.below(6);
    REQUIRE(v < 6);
    ++counts[v];
  }
  for (int n : counts) CHECK(std::abs(n - 10000) < 600);  // about 6 standard deviations
  for (int i = 0; i < 1000; ++i) {
    const double u = g.uniform();
    REQUIRE(u >= 0);
    REQUIRE(u < 1);
  }
  CHECK(gate::row_seed(1, "a\nb\nc") == gate::row_seed(1, "a\nb\nc"));
  CHECK(gate::row_seed(1, "a\nb\nc") != gate::row_seed(2, "a\nb\nc"));
  CHECK(gate::row_seed(1, "a\nb\nc") != gate::row_seed(1, "a\nb\nd"));
}

TEST_CASE("median and robust relative noise", "[gate][statistics]") {
  CHECK(gate::median(std::vector<double>{3, 1, 2}) == 2);
  CHECK(gate::median(std::vector<double>{4, 1, 3, 2}) == 2.5);
  CHECK(gate::median(std::vector<double>{}) == 0);
  CHECK(gate::relative_noise(std::vector<double>{5}) == 0);
  CHECK(gate::relative_noise(std::vector<double>{0, 0, 0}) == 0);
  // MAD of {90, 100, 110} is 10: 1.4826 x 10 / 100.
  CHECK(gate::relative_noise(std::vector<double>{90, 100, 110}) == Approx(0.14826));
  // One wild outlier does not move it.
  CHECK(gate::relative_noise(std::vector<double>{90, 100, 110, 100, 1e6}) == Approx(0.14826));
  // Normal data: close to its relative standard deviation.
  const auto v = synthetic(1000, 0.10, 2000, 5);
  CHECK(gate::relative_noise(v) == Approx(0.10).margin(0.01));
}

TEST_CASE("Mann-Whitney U: exact p-values, ties, and the normal approximation",
          "[gate][statistics]") {
  SECTION("complete separation of 5 and 5: p = 2 / C(10, 5)") {
    const std::vector<double> a{1, 2, 3, 4, 5}, b{6, 7, 8, 9, 10};
    const auto r = gate::mann_whitney(a, b);
    CHECK(r.exact);
    CHECK(r.u == 0);
    CHECK(r.p_value == Approx(2.0 / 252));
    CHECK(gate::mann_whitney(b, a).u == 25);
    CHECK(gate::mann_whitney(b, a).p_value == Approx(2.0 / 252));
  }
  SECTION("with ties the exact p-value is the permutation distribution given the midranks") {
    const std::vector<std::vector<double>> as{{1, 2, 2, 3}, {5, 5, 5}, {1, 1, 2, 9, 9}};
    const std::vector<std::vector<double>> bs{{2, 3, 4, 5}, {5, 5, 6, 7, 5}, {2, 2, 3, 9}};
    for (std::size_t i = 0; i < as.size(); ++i) {
      INFO(i);
      const auto r = gate::mann_whitney(as[i], bs[i]);
      CHECK(r.exact);
      CHECK(r.p_value == Approx(brute_force_p(as[i], bs[i])));
    }
    // U counts ties as one half: {1,2,2,3} vs {2,3,4,5} -> 0+0.5+0.5+1.5 = 2.5.
    CHECK(gate::mann_whitney(as[0], bs[0]).u == 2.5);
  }
  SECTION("all values equal: no evidence, p = 1, exact or not") {
    const std::vector<double> a(10, 3.0), b(50, 3.0);
    CHECK(gate::mann_whitney(a, b).p_value == 1);
    CHECK(gate::mann_whitney(a, b, 0).p_value == 1);
  }
  SECTION("the normal approximation agrees with the exact distribution at n = 20 + 20") {
    for (double shift : {1.0, 1.03, 1.06, 1.1}) {
      INFO(shift);
      const auto a = synthetic(100, 0.05, 20, 11);
      const auto b = synthetic(100 * shift, 0.05, 20, 12);
      const auto exact = gate::mann_whitney(a, b, 40);
      const auto normal = gate::mann_whitney(a, b, 0);
      CHECK(exact.exact);
      CHECK_FALSE(normal.exact);
      CHECK(exact.u == normal.u);
      CHECK(normal.p_value == Approx(exact.p_value).margin(0.01));
    }
  }
  SECTION("small samples can never be significant: 3 vs 3 has p >= 0.1") {
    const std::vector<double> a{1, 2, 3}, b{10, 11, 12};
    CHECK(gate::mann_whitney(a, b).p_value == Approx(0.1));
  }
}

TEST_CASE("the bootstrap interval of the ratio of medians is seeded and sensible",
          "[gate][statistics]") {
  const auto base = synthetic(100, 0.01, 20, 1);
  const auto shifted = synthetic(120, 0.01, 20, 2);
  const auto a = gate::bootstrap_ratio_of_medians(base, shifted, 0.95, 2000, 99);
  const auto b = gate::bootstrap_ratio_of_medians(base, shifted, 0.95, 2000, 99);
  CHECK(a.lo == b.lo);
  CHECK(a.hi == b.hi);
  const double observed = gate::median(shifted) / gate::median(base);
  CHECK(a.lo <= observed);
  CHECK(a.hi >= observed);
  CHECK(a.lo > 1.15);
  CHECK(a.hi < 1.25);
  // A wider confidence gives a wider interval.
  const auto wide = gate::bootstrap_ratio_of_medians(base, shifted, 0.99, 2000, 99);
  CHECK(wide.lo <= a.lo);
  CHECK(wide.hi >= a.hi);
  // Constant sides: a point.
  const std::vector<double> two(5, 2.0), three(7, 3.0);
  const auto point = gate::bootstrap_ratio_of_medians(two, three, 0.95, 500, 1);
  CHECK(point.lo == 1.5);
  CHECK(point.hi == 1.5);
  // A zero baseline median: ratios of +inf, never NaN.
  const std::vector<double> zeros{0, 0, 0, 1}, ones{1, 1, 1};
  const auto inf = gate::bootstrap_ratio_of_medians(zeros, ones, 0.95, 500, 1);
  CHECK_FALSE(std::isnan(inf.lo));
  CHECK(std::isinf(inf.hi));
}

TEST_CASE("the two-level bootstrap widens with the spread between rounds", "[gate][statistics]") {
  const gate::round_samples tight_base{
      {100, 101, 99, 100}, {100, 100, 101, 99}, {99, 100, 101, 100}};
  const gate::round_samples spread_base{
      {90, 91, 89, 90}, {100, 100, 101, 99}, {110, 111, 109, 110}};
  const gate::round_samples current{{100, 101, 99, 100}, {101, 100, 99, 100}, {100, 99, 101, 100}};
  const auto tight = gate::bootstrap_ratio_of_medians(tight_base, current, 0.95, 2000, 7);
  const auto spread = gate::bootstrap_ratio_of_medians(spread_base, current, 0.95, 2000, 7);
  CHECK(tight.hi - tight.lo < 0.03);
  CHECK(spread.hi - spread.lo > 0.1);
  CHECK(spread.lo <= 1.0);
  CHECK(spread.hi >= 1.0);
  // Seeded: the same inputs give the same interval.
  const auto again = gate::bootstrap_ratio_of_medians(spread_base, current, 0.95, 2000, 7);
  CHECK(again.lo == spread.lo);
  CHECK(again.hi == spread.hi);
  // One round a side is the one-level bootstrap of the pooled samples.
  const gate::round_samples one_a{{1, 2, 3, 4, 5}}, one_b{{2, 3, 4, 5, 6}};
  const std::vector<double> a{1, 2, 3, 4, 5}, b{2, 3, 4, 5, 6};
  const auto two = gate::bootstrap_ratio_of_medians(one_a, one_b, 0.9, 500, 3);
  const auto flat = gate::bootstrap_ratio_of_medians(a, b, 0.9, 500, 3);
  CHECK(two.lo == Approx(flat.lo));
  CHECK(two.hi == Approx(flat.hi));
}

TEST_CASE("the noise between rounds pools both sides around their own means",
          "[gate][statistics]") {
  const gate::round_samples one{{100}};
  CHECK(gate::between_round_noise(one, one).relative == 0);
  // Round medians 90, 110 (mean 100): deviations of 10% each, one degree of freedom.
  const gate::round_samples spread{{90, 90}, {110, 110}};
  CHECK(gate::between_round_noise(spread, one).relative == Approx(std::sqrt(0.02)));
  // The other side shifted by 50% adds no noise of its own when its rounds agree.
  const gate::round_samples shifted{{150}, {150}};
  CHECK(gate::between_round_noise(spread, shifted).relative == Approx(std::sqrt(0.02 / 2)));
  CHECK(gate::between_round_noise(spread, one).freedom == 1);
  CHECK(gate::between_round_noise(spread, shifted).freedom == 2);
}

TEST_CASE("chi-square quantiles and the upper bound of a spread from few rounds",
          "[gate][statistics]") {
  // Table values: the lower 5% and 10% points for 1, 2, 4 and 10 degrees of freedom.
  CHECK(gate::chi_square_quantile(0.05, 1) == Approx(0.003932).epsilon(1e-3));
  CHECK(gate::chi_square_quantile(0.05, 2) == Approx(0.102587).epsilon(1e-4));
  CHECK(gate::chi_square_quantile(0.05, 4) == Approx(0.710723).epsilon(1e-4));
  CHECK(gate::chi_square_quantile(0.10, 4) == Approx(1.063623).epsilon(1e-4));
  CHECK(gate::chi_square_quantile(0.05, 10) == Approx(3.940299).epsilon(1e-4));
  CHECK(gate::chi_square_quantile(0.95, 4) == Approx(9.487729).epsilon(1e-4));

  // Three rounds a side (4 degrees of freedom): a 4% spread may be 9.5% at 95%.
  CHECK(gate::spread_upper_bound({0.04, 4}, 0.95) == Approx(0.04 * std::sqrt(4 / 0.710723)));
  // The bound shrinks towards the estimate as rounds are added, and never falls below it.
  double previous = 1e9;
  for (std::size_t f : {1, 2, 4, 8, 16, 64, 256}) {
    const double bound = gate::spread_upper_bound({0.04, f}, 0.95);
    CHECK(bound > 0.04);
    CHECK(bound < previous);
    previous = bound;
  }
  CHECK(gate::spread_upper_bound({0.04, 0}, 0.95) == 0.04);  // no freedom: nothing to widen
  CHECK(gate::spread_upper_bound({0, 4}, 0.95) == 0);
}
