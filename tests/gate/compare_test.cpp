// Verdicts and exit codes of compare on synthetic samples, pairing, and refusals.
#include <catch2/catch.hpp>

#include <string>

#include "fixtures.hpp"
#include "gate/compare.hpp"
#include "gate/output.hpp"

using namespace pinbench;
using namespace pinbench::testing;

namespace {

gate::comparison compare_one(const std::string& better, const std::vector<double>& base,
                             const std::vector<double>& current, gate::options o = {},
                             const std::string& unit = "ns") {
  return gate::compare(one_metric(better, base, unit), one_metric(better, current, unit), o);
}

// A copy: callers pass temporaries.
gate::row only_row(const gate::comparison& c) {
  REQUIRE(c.rows.size() == 1);
  return c.rows.front();
}

}  // namespace

TEST_CASE("identical distributions are unchanged, whichever direction is better",
          "[gate][verdict]") {
  for (const std::string better : {"higher", "lower"}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      INFO(better << " seed " << seed);
      const auto c = compare_one(better, synthetic(1000, 0.01, 20, seed * 10),
                                 synthetic(1000, 0.01, 20, seed * 10 + 1));
      const auto& r = only_row(c);
      CHECK(r.result == gate::verdict::unchanged);
      CHECK(r.gated);
      CHECK(r.ci_lo.value() >= 0.95);
      CHECK(r.ci_hi.value() <= 1.05);
      CHECK(c.exit_code() == 0);
    }
  }
}

TEST_CASE(
    "a 20% shift with low noise is a regression in the worse direction and an "
    "improvement in the better one",
    "[gate][verdict]") {
  const auto base = synthetic(1000, 0.01, 15, 21);
  const auto up = synthetic(1200, 0.01, 15, 22);
  const auto down = synthetic(800, 0.01, 15, 23);
  struct expectation {
    std::string better;
    const std::vector<double>* current;
    gate::verdict v;
  };
  const std::vector<expectation> cases{
      {"lower", &up, gate::verdict::regression},     // a time grew
      {"higher", &down, gate::verdict::regression},  // a bandwidth fell
      {"lower", &down, gate::verdict::improvement},
      {"higher", &up, gate::verdict::improvement},
  };
  for (const auto& e : cases) {
    INFO(e.better << " -> " << gate::to_string(e.v));
    const auto c = compare_one(e.better, base, *e.current);
    const auto& r = only_row(c);
    CHECK(r.result == e.v);
    CHECK(r.p_value.value() < 0.001);
    CHECK(r.test == "exact");
    CHECK(r.threshold == Approx(0.05));
    CHECK(r.source == gate::threshold_source::option);
    CHECK(r.reason.find(e.v == gate::verdict::regression ? "worse by" : "better by") !=
          std::string::npos);
    // Improvements never fail the gate; regressions do (exit 1).
    CHECK(c.exit_code() == (e.v == gate::verdict::regression ? 1 : 0));
  }
}

TEST_CASE("a 3% shift under 10% noise is inconclusive, and only fails under --strict",
          "[gate][verdict]") {
  for (std::size_t n : {10, 30, 100}) {
    for (const std::string better : {"higher", "lower"}) {
      INFO(better << " n=" << n);
      const auto base = synthetic(1000, 0.10, n, 31 + n);
      const auto current = synthetic(1030, 0.10, n, 32 + n);
      auto c = compare_one(better, base, current);
      const auto& r = only_row(c);
      CHECK(r.result == gate::verdict::inconclusive);
      CHECK(r.source == gate::threshold_source::noise);  // 2 x 10% noise > 5%
      CHECK(r.threshold > r.requested);
      CHECK(r.requested == Approx(0.05));
      CHECK(c.exit_code() == 0);
      c.settings.fail = gate::fail_on::inconclusive;
      CHECK(c.exit_code() == 3);
      c.settings.fail = gate::fail_on::never;
      CHECK(c.exit_code() == 0);
    }
  }
}

TEST_CASE("the threshold is the largest of the option, the scenario's gate and the noise",
          "[gate][verdict]") {
  const auto base = synthetic(1000, 0.005, 15, 41);
  const auto current = synthetic(1080, 0.005, 15, 42);  // 8% slower
  SECTION("8% beyond the default 5%: regression") {
    CHECK(only_row(compare_one("lower", base, current)).result == gate::verdict::regression);
  }
  SECTION("--threshold 10%: unchanged") {
    gate::options o;
    o.threshold = 0.10;
    const auto& r = only_row(compare_one("lower", base, current, o));
    CHECK(r.result == gate::verdict::unchanged);
    CHECK(r.requested == Approx(0.10));
  }
  SECTION("a gate of 0.10 in the scenario: unchanged, and the row says where it came from") {
    auto b = one_metric("lower", base);
    auto cur = one_metric("lower", current);
    cur.scenarios[0].gate = {{"copy_time", {{"threshold", 0.10}}}};
    const auto c = gate::compare(b, cur, {});
    const auto& r = only_row(c);
    CHECK(r.result == gate::verdict::unchanged);
    CHECK(r.source == gate::threshold_source::gate);
    CHECK(r.threshold == Approx(0.10));
  }
  SECTION("the noise floor never lets a change inside the noise count as a regression") {
    gate::options o;
    o.noise_multiple = 40;  // 40 x about 0.5%
    const auto r = only_row(compare_one("lower", base, current, o));
    REQUIRE(r.threshold > 0.09);
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK(r.source == gate::threshold_source::noise);
    CHECK(r.reason.find("noise") != std::string::npos);
  }
}

gate::comparison compare_deterministic(const std::string& better, const std::vector<double>& base,
                                       const std::vector<double>& current) {
  return gate::compare(one_deterministic(better, base), one_deterministic(better, current), {});
}

TEST_CASE("too few samples are inconclusive, only what an engine declares deterministic is exact",
          "[gate][verdict]") {
  SECTION("two samples a side") {
    const auto& r = only_row(compare_one("lower", {100, 101}, {150, 151}));
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK(r.reason.find("too few samples") != std::string::npos);
  }
  SECTION("one side with one sample against a noisy other side") {
    const auto& r = only_row(compare_one("lower", {100}, synthetic(150, 0.05, 10, 3)));
    CHECK(r.result == gate::verdict::inconclusive);
  }
  SECTION("one timed sample a side says nothing about noise") {
    const auto r = only_row(compare_one("lower", {1000}, {1300}));
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK(r.reason.find("too few samples") != std::string::npos);
  }
  SECTION("repeated equal timed samples are judged statistically, not exactly") {
    // Three equal samples a side cannot reach p < 0.05 (the exact test's floor is 0.1).
    const auto r = only_row(compare_one("lower", {1000, 1000, 1000}, {1300, 1300, 1300}));
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK_FALSE(r.deterministic);
    CHECK(r.p_value.has_value());
  }
  SECTION("a counted value the engine did not declare deterministic is not exact") {
    // peak_pinned_bytes of a loader depends on thread timing: one sample a side says nothing.
    const auto r =
        only_row(compare_one("lower", {48.0 * 1024 * 1024}, {40.0 * 1024 * 1024}, {}, "bytes"));
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK(r.reason.find("too few samples") != std::string::npos);
  }
  SECTION("a deterministic counter (one sample each) that grew 30%") {
    const auto c = compare_deterministic("lower", {1000}, {1300});
    const auto& r = only_row(c);
    CHECK(r.deterministic);
    CHECK(r.result == gate::verdict::regression);
    CHECK(r.ratio == Approx(1.3));
    CHECK_FALSE(r.p_value.has_value());
    CHECK(r.reason.find("deterministic") != std::string::npos);
    CHECK(c.exit_code() == 1);
  }
  SECTION("a deterministic counter that did not move") {
    CHECK(only_row(compare_deterministic("lower", {4096, 4096}, {4096})).result ==
          gate::verdict::unchanged);
  }
  SECTION("a deterministic counter is exact however noisy the rest is: no noise floor") {
    gate::options o;
    o.noise_multiple = 100;
    const auto r = only_row(
        gate::compare(one_deterministic("lower", {1000}), one_deterministic("lower", {1060}), o));
    CHECK(r.result == gate::verdict::regression);
    CHECK(r.threshold == Approx(0.05));
  }
  SECTION("deterministic on one side only (an older baseline) is judged statistically") {
    const auto r =
        only_row(gate::compare(one_metric("lower", {1000}, "bytes", "reserved_bytes.all.peak"),
                               one_deterministic("lower", {1300}), {}));
    CHECK_FALSE(r.deterministic);
    CHECK(r.result == gate::verdict::inconclusive);
  }
  SECTION("both medians zero") {
    CHECK(only_row(compare_one("lower", {0, 0, 0}, {0, 0, 1})).result == gate::verdict::unchanged);
  }
  SECTION("a zero baseline median has no ratio") {
    const auto& r = only_row(compare_one("higher", {0, 0, 0}, {1, 2, 3}));
    CHECK(r.result == gate::verdict::inconclusive);
    CHECK(r.reason.find("median is 0") != std::string::npos);
  }
  SECTION("no samples") {
    CHECK(only_row(compare_one("lower", {}, {1, 2, 3})).result == gate::verdict::inconclusive);
  }
}

TEST_CASE("metrics without a direction are informative and never gated", "[gate][verdict]") {
  gate::options o;
  o.fail = gate::fail_on::inconclusive;
  const auto c = compare_one("", synthetic(100, 0.01, 10, 1), synthetic(200, 0.01, 10, 2), o);
  const auto& r = only_row(c);
  CHECK(r.result == gate::verdict::info);
  CHECK_FALSE(r.gated);
  CHECK(r.ratio == Approx(2).epsilon(0.05));
  // Nothing gated was compared: that does not pass a gate, unless allowed.
  CHECK(c.exit_code() == 3);
  CHECK(c.outcome_line().find("nothing to compare") != std::string::npos);
  o.allow_empty = true;
  CHECK(compare_one("", synthetic(100, 0.01, 10, 1), synthetic(200, 0.01, 10, 2), o).exit_code() ==
        0);
  CHECK(c.count(gate::verdict::info, false) == 1);
}

TEST_CASE("cases are paired by scenario and id, one-sided cases and failures are listed",
          "[gate][pairing]") {
  const auto low = [](std::uint64_t seed) { return synthetic(100, 0.01, 10, seed); };
  auto base =
      make_result({make_scenario("a", "transfer",
                                 {make_case("x=1", {make_metric("t", "ns", "lower", low(1)),
                                                    make_metric("gone", "ns", "lower", low(2))}),
                                  make_case("x=2", {make_metric("t", "ns", "lower", low(3))}),
                                  make_case("x=3", {make_metric("t", "ns", "lower", low(4))})})});
  auto current =
      make_result({make_scenario("a", "transfer",
                                 {make_case("x=3", {make_metric("t", "ns", "lower", low(5))}),
                                  make_case("x=1", {make_metric("t", "ns", "lower", low(6)),
                                                    make_metric("new", "count", "", {1})}),
                                  make_case("x=4", {make_metric("t", "ns", "lower", low(7))})})});
  current.scenarios[0].cases[0].status = result::case_status::error;
  current.scenarios[0].cases[0].message = "boom\nsecond line";

  auto c = gate::compare(base, current, {});
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].case_id == "x=1");
  CHECK(c.rows[0].metric == "t");
  CHECK(c.rows[0].result == gate::verdict::unchanged);
  CHECK(c.rows[1].case_id == "x=3");
  CHECK(c.rows[1].metric.empty());
  CHECK(c.rows[1].result == gate::verdict::failed);
  CHECK(c.rows[1].reason == "failed in the current result: boom second line");
  REQUIRE(c.only_in_base.size() == 2);
  CHECK(c.only_in_base[0].metric == "gone");
  CHECK(c.only_in_base[1].case_id == "x=2");
  CHECK(c.only_in_base[1].gated);
  REQUIRE(c.only_in_current.size() == 2);
  CHECK(c.only_in_current[0].metric == "new");
  CHECK_FALSE(c.only_in_current[0].gated);
  CHECK(c.only_in_current[1].case_id == "x=4");
  CHECK(c.exit_code() == 1);  // the failed case
  CHECK(c.summary_line().find("1 failed case") != std::string::npos);

  SECTION("a vanished gated case fails only under --fail-on inconclusive") {
    current.scenarios[0].cases[0].status = result::case_status::ok;
    auto ok = gate::compare(base, current, {});
    CHECK(ok.exit_code() == 0);
    ok.settings.fail = gate::fail_on::inconclusive;
    CHECK(ok.exit_code() == 3);
  }
  SECTION("--metric keeps only that metric, with the same interval as without the filter") {
    gate::options o;
    o.metrics = {"t"};
    const auto filtered = gate::compare(base, current, o);
    CHECK(filtered.only_in_base.size() == 1);  // x=2; "gone" is filtered out
    CHECK(filtered.only_in_current.size() == 1);
    CHECK(filtered.rows[0].ci_lo == c.rows[0].ci_lo);
    o.metrics = {"tt"};
    CHECK_THROWS_WITH(gate::compare(base, current, o), Catch::Contains("did you mean \"t\""));
  }
}

TEST_CASE("results from different backends or devices are refused unless allowed",
          "[gate][pairing]") {
  const auto s = [] {
    return std::vector{make_scenario(
        "a", "transfer", {make_case("", {make_metric("t", "ns", "lower", {1, 2, 3})})})};
  };
  const auto host = make_result(s(), "host", "host emulation (A)");
  const auto other_cpu = make_result(s(), "host", "host emulation (B)");
  const auto gpu1 = make_result(s(), "cuda", "NVIDIA H200", "GPU-1");
  const auto gpu2 = make_result(s(), "cuda", "NVIDIA H200", "GPU-2");

  CHECK_THROWS_AS(gate::compare(host, gpu1, {}), gate::incomparable_error);
  CHECK_THROWS_WITH(gate::compare(host, gpu1, {}, "base.json", "current.json"),
                    Catch::Contains("base.json and current.json differ: backend \"host\" vs "
                                    "\"cuda\"") &&
                        Catch::Contains("--allow-env-mismatch"));
  CHECK_THROWS_AS(gate::compare(host, other_cpu, {}), environment_error);
  CHECK_THROWS_WITH(gate::compare(gpu1, gpu2, {}), Catch::Contains("GPU-1"));
  CHECK_NOTHROW(gate::compare(gpu1, gpu1, {}));

  gate::options o;
  o.allow_env_mismatch = true;
  const auto c = gate::compare(host, gpu1, o);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("backend") != std::string::npos);
  CHECK(c.env_mismatch.find("cuda") != std::string::npos);
}

TEST_CASE("a case id twice in one scenario is an input error naming the path", "[gate][pairing]") {
  auto r = make_result({make_scenario("a", "transfer", {make_case("x", {}), make_case("x", {})})});
  try {
    (void)gate::compare(r, make_result({}), {}, "base.json", "cur.json");
    FAIL("no error");
  } catch (const input_error& e) {
    CHECK(e.file() == "base.json");
    CHECK(e.json_path() == "scenarios[0].cases[1].id");
  }
}

TEST_CASE("the same inputs and seed give the same comparison, and thresholds parse",
          "[gate][verdict]") {
  const auto b = one_metric("lower", synthetic(100, 0.05, 25, 1));
  const auto c = one_metric("lower", synthetic(104, 0.05, 25, 2));
  gate::options o;
  const auto one = gate::to_json(gate::compare(b, c, o)).dump();
  CHECK(one == gate::to_json(gate::compare(b, c, o)).dump());
  // Another seed draws other resamples: some interval bound moves.
  const auto first = gate::compare(b, c, o).rows[0];
  bool moved = false;
  for (std::uint64_t seed = 2; seed < 6; ++seed) {
    o.seed = seed;
    const auto other = gate::compare(b, c, o).rows[0];
    moved = moved || other.ci_lo != first.ci_lo || other.ci_hi != first.ci_hi;
  }
  CHECK(moved);
}

TEST_CASE("with rounds, the interval and the threshold follow the spread between rounds",
          "[gate][rounds]") {
  // Each round is tight (0.5% noise) but the rounds sit 8% apart: what happens from process to
  // process on a shared machine. Pooled samples would call a 6% shift a sure regression.
  const auto rounds = [](double shift, std::uint64_t seed) {
    std::vector<std::vector<double>> out;
    const double centers[] = {1000, 1080, 960};
    for (std::size_t k = 0; k < 3; ++k)
      out.push_back(synthetic(centers[k] * shift, 0.005, 20, seed + k));
    return out;
  };
  const auto base = one_metric_in_rounds("lower", rounds(1.0, 10));
  const auto same_code = one_metric_in_rounds("lower", rounds(1.06, 20));

  SECTION("a shift within the rounds' spread is not a regression") {
    const auto r = only_row(gate::compare(base, same_code, {}));
    CHECK(r.base.rounds == 3);
    CHECK(r.current.rounds == 3);
    CHECK(r.round_noise);
    CHECK(r.noise > 0.03);
    CHECK(r.source == gate::threshold_source::noise);
    CHECK(r.result != gate::verdict::regression);
    CHECK(r.reason.find("between rounds") != std::string::npos);
  }
  SECTION("the same samples without their rounds give a narrower interval") {
    auto flat_base = base, flat_current = same_code;
    flat_base.scenarios[0].cases[0].metrics[0].rounds.clear();
    flat_current.scenarios[0].cases[0].metrics[0].rounds.clear();
    const auto flat = only_row(gate::compare(flat_base, flat_current, {}));
    const auto by_round = only_row(gate::compare(base, same_code, {}));
    CHECK_FALSE(flat.round_noise);
    CHECK(flat.base.rounds == 1);
    CHECK(*flat.ci_hi - *flat.ci_lo < *by_round.ci_hi - *by_round.ci_lo);
  }
  SECTION("a slowdown well beyond the rounds' spread is still caught") {
    const auto slow = one_metric_in_rounds("lower", rounds(1.5, 30));
    const auto c = gate::compare(base, slow, {});
    CHECK(only_row(c).result == gate::verdict::regression);
    CHECK(c.exit_code() == 1);
  }
}

TEST_CASE("a baseline history: several results merge into one side, rounds kept apart",
          "[gate][rounds]") {
  std::vector<result::run_result> history;
  for (std::uint64_t k = 0; k < 3; ++k)
    history.push_back(
        one_metric_in_rounds("lower", {synthetic(1000 + 30.0 * static_cast<double>(k), 0.01, 8, k),
                                       synthetic(1010, 0.01, 8, k + 10)}));
  history.push_back(one_metric("lower", synthetic(990, 0.01, 8, 99)));  // an older file: no rounds
  const auto merged = result::merge_runs(history);
  REQUIRE(merged.scenarios.size() == 1);
  REQUIRE(merged.scenarios[0].cases.size() == 1);
  const auto& m = merged.scenarios[0].cases[0].metrics[0];
  CHECK(merged.repeat == 7);
  CHECK(m.samples.size() == 56);
  REQUIRE(m.rounds.size() == m.samples.size());
  // Files 0..2 hold rounds {0,1}, {2,3}, {4,5}; the file without rounds is round 6.
  CHECK(m.rounds.front() == 0);
  CHECK(m.rounds[8] == 1);
  CHECK(m.rounds[16] == 2);
  CHECK(m.rounds.back() == 6);
  CHECK(merged.scenarios[0].cases[0].extra["rounds"] == 7);

  const auto c = gate::compare(merged, one_metric("lower", synthetic(1000, 0.01, 8, 5)), {});
  const auto& r = c.rows.at(0);
  CHECK(r.base.rounds == 7);
  CHECK(r.current.rounds == 1);
  CHECK(r.round_noise);
  CHECK(r.result != gate::verdict::regression);
}

TEST_CASE("merging rounds keeps every completed round and the worst status", "[gate][rounds]") {
  const auto round = [](double v, result::case_status status = result::case_status::ok) {
    auto c = make_case("bytes=1MiB", {make_metric("copy_time", "ns", "lower", {v, v + 1})});
    c.status = status;
    if (c.status != result::case_status::ok) {
      c.metrics.clear();
      c.message = "boom";
    }
    return c;
  };
  SECTION("labels follow the rounds") {
    const auto c = result::merge_rounds({round(10), round(20), round(30)}, {0, 1, 2});
    CHECK(c.status == result::case_status::ok);
    CHECK(c.metrics[0].samples == std::vector<double>{10, 11, 20, 21, 30, 31});
    CHECK(c.metrics[0].rounds == std::vector<std::uint32_t>{0, 0, 1, 1, 2, 2});
  }
  SECTION("an interrupted round is left out with a warning") {
    const auto c =
        result::merge_rounds({round(10), round(0, result::case_status::interrupted)}, {0, 1});
    CHECK(c.status == result::case_status::ok);
    CHECK(c.metrics[0].samples.size() == 2);
    CHECK(c.warnings.at(0).find("round 2 was interrupted") != std::string::npos);
  }
  SECTION("a failed round fails the case, naming the round") {
    const auto c = result::merge_rounds({round(10), round(0, result::case_status::error)}, {0, 1});
    CHECK(c.status == result::case_status::error);
    CHECK(c.message == "round 2: boom");
  }
  SECTION("one round stays as it is") {
    const auto c = result::merge_rounds({round(10)}, {0});
    CHECK(c.metrics[0].rounds.empty());
  }
  SECTION("telemetry speaks of every round: reasons united, throttled in any, discards summed") {
    auto clean = round(10), hot = round(20);
    clean.extra["telemetry"] = {{"device", 0},
                                {"before", {{"sm_clock_mhz", 1980}}},
                                {"after", {{"sm_clock_mhz", 1980}}},
                                {"reasons_seen", {"gpu_idle"}},
                                {"throttled", false},
                                {"discarded_samples", 0}};
    hot.extra["telemetry"] = {{"device", 0},
                              {"before", {{"sm_clock_mhz", 1980}}},
                              {"after", {{"sm_clock_mhz", 1410}}},
                              {"reasons_seen", {"hw_thermal_slowdown"}},
                              {"throttled", true},
                              {"discarded_samples", 3}};
    const auto c = result::merge_rounds({clean, hot}, {0, 1});
    const auto& t = c.extra["telemetry"];
    CHECK(t["before"]["sm_clock_mhz"] == 1980);
    CHECK(t["after"]["sm_clock_mhz"] == 1410);
    CHECK(t["reasons_seen"] == nlohmann::json::array({"gpu_idle", "hw_thermal_slowdown"}));
    CHECK(t["throttled"] == true);
    CHECK(t["discarded_samples"] == 3);
  }
  SECTION("rounds that measured different link ceilings list each one") {
    auto a = round(10), b = round(20), same = round(30);
    a.extra["link_ceiling"] = {{"gbps", 30.0}, {"source", "host memcpy: 30"}};
    b.extra["link_ceiling"] = {{"gbps", 33.0}, {"source", "host memcpy: 33"}};
    same.extra["link_ceiling"] = a.extra["link_ceiling"];
    const auto c = result::merge_rounds({a, b}, {0, 1});
    CHECK(c.extra["link_ceiling"]["gbps"] == 30.0);
    REQUIRE(c.extra["link_ceiling"]["by_round"].size() == 2);
    CHECK(c.extra["link_ceiling"]["by_round"][1]["gbps"] == 33.0);
    CHECK(c.extra["link_ceiling"]["by_round"][1]["round"] == 1);
    const auto d = result::merge_rounds({a, same}, {0, 1});
    CHECK_FALSE(d.extra["link_ceiling"].contains("by_round"));
  }
}
