// A launched run's pieces that need no launcher: merging every rank's cases into one result,
// the inputs' fingerprint, and the fleet-outlier rule of the report.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "report/fleet.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"
#include "run/plan.hpp"
#include "run/ranks.hpp"
#include "scenario/scenario.hpp"

namespace pinbench {
namespace {

result::case_result bandwidth_case(std::string id, std::vector<double> samples) {
  result::case_result c;
  c.id = std::move(id);
  c.params = {{"bytes", "1MiB"}};
  auto& m = c.add("bandwidth", "GB/s", result::direction::higher);
  m.samples = std::move(samples);
  return c;
}

// One rank's result of a transfer scenario with one case, whose bandwidth is `gbps`.
result::run_result rank_run(double gbps) {
  result::run_result r;
  r.backend = "host";
  r.environment = {{"backend", "host"}};
  result::scenario_result s;
  s.name = "transfer-size";
  s.kind = "transfer";
  s.cases.push_back(bandwidth_case("bytes=1MiB", {gbps, gbps * 1.001, gbps * 0.999}));
  r.scenarios.push_back(s);
  return r;
}

nlohmann::json entry(int rank, std::string host) {
  return {{"rank", rank},
          {"local_rank", 0},
          {"host", std::move(host)},
          {"backend", "host"},
          {"device", {{"name", "emulated"}, {"index", 0}}}};
}

}  // namespace

TEST_CASE("merge_ranks keeps every rank's case, marked with its rank", "[dist][ranks]") {
  const auto merged =
      run::merge_ranks({rank_run(10), rank_run(11)}, {entry(0, "a"), entry(1, "b")});
  REQUIRE(merged.scenarios.size() == 1);
  const auto& cases = merged.scenarios[0].cases;
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].id == "rank=0,bytes=1MiB");
  CHECK(cases[1].id == "rank=1,bytes=1MiB");
  CHECK(cases[1].rank == 1);
  CHECK(result::id_without_rank(cases[1]) == "bytes=1MiB");
  CHECK(merged.ranks.size() == 2);

  SECTION("and the result file carries ranks and rank through a round trip") {
    const auto back = result::from_json(result::to_json(merged), "mem");
    REQUIRE(back.scenarios[0].cases.size() == 2);
    CHECK(back.scenarios[0].cases[1].rank == 1);
    CHECK(back.ranks == merged.ranks);
  }
  SECTION("a case without matrix reads rank=N alone") {
    auto one = rank_run(10);
    one.scenarios[0].cases[0].id = "default";
    const auto m = run::merge_ranks({one, one}, {entry(0, "a"), entry(1, "b")});
    CHECK(m.scenarios[0].cases[1].id == "rank=1");
    CHECK(result::id_without_rank(m.scenarios[0].cases[1]) == "default");
  }
}

TEST_CASE("a plan's fingerprint tells different inputs apart", "[dist][ranks]") {
  const auto plan_of = [](std::vector<std::string> sets, std::uint64_t seed) {
    run::plan_settings settings;
    settings.seed = seed;
    return run::make_plan({"builtin:transfer-size"}, sets, settings);
  };
  const nlohmann::json platform{"host", nlohmann::json::array(), ""};
  const auto base = plan_of({}, 1).fingerprint(platform);
  CHECK(base == plan_of({}, 1).fingerprint(platform));
  CHECK(base != plan_of({"memory=pageable"}, 1).fingerprint(platform));
  CHECK(base != plan_of({}, 2).fingerprint(platform));
  CHECK(base != plan_of({}, 1).fingerprint({"host", {"slow=20%"}, ""}));
}

TEST_CASE("fleet outliers: a rank far from the others in MADs is named", "[dist][ranks][report]") {
  std::vector<result::run_result> runs;
  std::vector<nlohmann::json> entries;
  // Eight ranks near 24 GB/s, one at 11 GB/s: a degraded link.
  const std::vector<double> gbps{24.1, 24.4, 23.9, 24.6, 24.0, 11.2, 24.3, 24.2};
  for (std::size_t r = 0; r < gbps.size(); ++r) {
    runs.push_back(rank_run(gbps[r]));
    entries.push_back(entry(static_cast<int>(r), "node" + std::to_string(r)));
  }
  const auto merged = run::merge_ranks(runs, entries);
  const auto outliers = report::fleet_outliers(merged);
  REQUIRE(outliers.size() == 1);
  CHECK(outliers[0].rank == 5);
  CHECK(outliers[0].host == "node5");
  CHECK(outliers[0].metric == "bandwidth");
  CHECK(outliers[0].case_id == "bytes=1MiB");
  CHECK(outliers[0].mads > 3.5);
  const auto line = report::describe(outliers[0]);
  CHECK_THAT(line, Catch::Contains("rank 5 (node5, emulated #0)"));
  CHECK_THAT(line, Catch::Contains("fleet median"));
  CHECK_THAT(report::to_table(merged), Catch::Contains("outlier: rank 5"));
  CHECK_THAT(report::to_markdown(merged), Catch::Contains("outlier:"));

  SECTION("a fleet within a few percent has none, however small its MAD") {
    std::vector<result::run_result> close;
    for (double v : {24.0, 24.0, 24.0, 24.0, 24.9}) close.push_back(rank_run(v));
    std::vector<nlohmann::json> e;
    for (int r = 0; r < 5; ++r) e.push_back(entry(r, "n"));
    CHECK(report::fleet_outliers(run::merge_ranks(close, e)).empty());
  }
  SECTION("two ranks are too few to call one an outlier") {
    CHECK(report::fleet_outliers(
              run::merge_ranks({rank_run(24), rank_run(11)}, {entry(0, "a"), entry(1, "b")}))
              .empty());
  }
}

}  // namespace pinbench
