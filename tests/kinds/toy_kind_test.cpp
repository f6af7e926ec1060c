// Adding a kind takes its description alone: a toy kind, registered from the tests folder, goes
// through `validate`, `run`, `list --params` and `report` of the very CLI (app::run_cli, in this
// process) the way a built-in kind does.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_in_process.hpp"
#include "cli_runner.hpp"
#include "core/error.hpp"
#include "kinds/registry.hpp"
#include "measure/protocol.hpp"
#include "result/result_io.hpp"

namespace pinbench {
namespace {

// The toy's params, parsed once per case by its parse_case.
struct toy_params final : measure::case_params {
  double steps = 0;
  std::string label;
};

// Counts to its `steps` param once per sample: a sample's value is known in advance, so the
// test can check that the runner, the result file and the report carried it through.
class toy_engine final : public measure::engine {
 public:
  [[nodiscard]] result::case_result run_case(const measure::case_spec& c,
                                             measure::run_context&) override {
    result::case_result r;
    const double steps = measure::params_of<toy_params>(c).steps;
    const auto steps_done = measure::declare(r, "steps_done", "count", result::direction::higher);
    measure::measure_case(r, c.sampling,
                          {.warm_up = [] {},
                           .sample = [&]() -> std::optional<double> {
                             steps_done.add(steps);
                             return steps;
                           }});
    return r;
  }
  [[nodiscard]] std::string verdict(const result::scenario_result& s,
                                    device::platform_kind /*kind*/) const override {
    return "toy verdict over " + std::to_string(s.cases.size()) + " cases";
  }
};

kinds::kind_spec toy_kind() {
  kinds::kind_spec k;
  k.kind = "toy";
  k.help = "a kind of the tests' own";
  k.params = {kinds::bounded("steps", kinds::param_type::integer, 3, 1, false, 100,
                             "steps per sample (count)"),
              kinds::text("label", "", "free text")};
  k.parse_case = [](const nlohmann::json& params,
                    const std::string& source) -> std::shared_ptr<const measure::case_params> {
    auto p = std::make_shared<toy_params>();
    p->steps = params.at("steps").get<double>();
    p->label = params.at("label").get<std::string>();
    if (p->label == "forbidden" && p->steps > 2)
      throw input_error(source, "params.label", "\"forbidden\" allows at most 2 steps");
    return p;
  };
  k.make_engine = [] { return std::make_unique<toy_engine>(); };
  k.headlines = {{"steps_done", true}};
  k.figures = [](const result::scenario_result& s, const std::string& id_prefix) {
    return chart::sweep_charts(s, id_prefix, {{"steps", "steps_done", "steps"}});
  };
  return k;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("a kind registered from the tests alone goes through validate, run, list and report",
          "[kinds][registry][cli]") {
  const kinds::scoped_kind registered(toy_kind());
  const auto dir = testing::fresh_dir("toy-kind");
  const auto scenario = dir / "toy.json";
  write_file(scenario, R"({
    "schema": "pinbench.scenario/1", "name": "toy-sweep", "kind": "toy",
    "params": {"label": "hello"},
    "matrix": {"steps": [2, 4]},
    "sampling": {"warmup": 0, "min_samples": 3, "max_samples": 3, "min_time": "0"}
  })");

  SECTION("validate checks the toy's params like any other kind's") {
    const auto ok = testing::run_cli_in_process({"validate", scenario.string()}, dir);
    INFO(ok.err);
    CHECK(ok.code == 0);

    const auto bad_file = dir / "bad.json";
    write_file(bad_file, R"({"schema": "pinbench.scenario/1", "name": "bad", "kind": "toy",
                             "params": {"steps": 1000}})");
    const auto bad = testing::run_cli_in_process({"validate", bad_file.string()}, dir);
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("params.steps"));
    CHECK_THAT(bad.err, Catch::Contains("100"));

    // The kind's own rule across params, on every expanded case.
    const auto rule_file = dir / "rule.json";
    write_file(rule_file, R"({"schema": "pinbench.scenario/1", "name": "rule", "kind": "toy",
                             "params": {"label": "forbidden"}, "matrix": {"steps": [1, 4]}})");
    const auto broken = testing::run_cli_in_process({"validate", rule_file.string()}, dir);
    CHECK(broken.code == 2);
    CHECK_THAT(broken.err, Catch::Contains("params.label"));
    CHECK_THAT(broken.err, Catch::Contains("at most 2 steps"));
  }

  SECTION("list --params shows the toy's params") {
    const auto listed = testing::run_cli_in_process({"list", "--params", "--format", "json"}, dir);
    REQUIRE(listed.code == 0);
    const auto kinds_json = nlohmann::json::parse(listed.out);
    const auto toy = std::find_if(kinds_json.begin(), kinds_json.end(),
                                  [](const nlohmann::json& k) { return k.at("kind") == "toy"; });
    REQUIRE(toy != kinds_json.end());
    CHECK(toy->at("help") == "a kind of the tests' own");
    REQUIRE(toy->at("params").size() == 2);
    CHECK(toy->at("params")[0].at("name") == "steps");
    CHECK(toy->at("params")[0].at("default") == "3");
  }

  SECTION("run measures it with its engine, and report shows its columns, verdict and chart") {
    const auto result_file = dir / "result.json";
    const auto ran = testing::run_cli_in_process(
        {"run", scenario.string(), "--out", result_file.string(), "-q"}, dir);
    INFO(ran.err);
    REQUIRE(ran.code == 0);
    const auto r = result::read_result_file(result_file.string());
    REQUIRE(r.scenarios.size() == 1);
    const auto& s = r.scenarios[0];
    CHECK(s.kind == "toy");
    CHECK(s.verdict == "toy verdict over 2 cases");
    REQUIRE(s.cases.size() == 2);
    for (const auto& c : s.cases) {
      INFO(c.id);
      CHECK(c.status == result::case_status::ok);
      const auto* m = c.find("steps_done");
      REQUIRE(m != nullptr);
      CHECK(m->samples.size() == 3);
      CHECK(m->samples.front() == c.params.at("steps").get<double>());
    }

    const auto table =
        testing::run_cli_in_process({"report", result_file.string(), "--table"}, dir);
    REQUIRE(table.code == 0);
    CHECK_THAT(table.out, Catch::Contains("steps_done"));
    CHECK_THAT(table.out, Catch::Contains("steps=4"));

    const auto html =
        testing::run_cli_in_process({"report", result_file.string(), "--html", "-"}, dir);
    REQUIRE(html.code == 0);
    CHECK_THAT(html.out, Catch::Contains("id=\"s0-steps\""));
    CHECK_THAT(html.out, Catch::Contains("toy verdict over 2 cases"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a scoped kind is gone when its scope ends", "[kinds][registry]") {
  const auto before = kinds::all().size();
  {
    const kinds::scoped_kind registered(toy_kind());
    CHECK(kinds::find("toy") != nullptr);
    CHECK(kinds::all().size() == before + 1);
    CHECK_THROWS_AS(kinds::add(toy_kind()), std::invalid_argument);
  }
  CHECK(kinds::find("toy") == nullptr);
  CHECK(kinds::all().size() == before);
  CHECK(kinds::find("transfer") != nullptr);
}

}  // namespace pinbench
