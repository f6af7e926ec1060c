// `pinbench check`: REFS files read (and refused with their JSON path), figures judged against
// bounds, systems selected (a launch's ranks by their own host and device), references made
// from a result (--init), the writers (golden files) and the command's exit codes.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_in_process.hpp"
#include "core/error.hpp"
#include "gate/fixtures.hpp"
#include "gate/reference.hpp"
#include "golden.hpp"
#include "report/report.hpp"
#include "scratch_dir.hpp"

namespace pinbench::reference_test {

namespace {

using nlohmann::ordered_json;
using testing::make_case;
using testing::make_metric;
using testing::make_result;
using testing::make_scenario;

// A node's run: bandwidth and copy time of two sizes, a deterministic counter, a failed case.
result::run_result node_run(double slowdown = 1) {
  auto counter = make_metric("num_ooms", "count", "lower", {0});
  counter.deterministic = true;
  auto failed = make_case("bytes=1GiB", {});
  failed.status = result::case_status::error;
  failed.message = "out of memory";
  const auto bw = [&](std::vector<double> v) {
    for (double& x : v) x /= slowdown;
    return make_metric("bandwidth", "GB/s", "higher", std::move(v));
  };
  const auto t = [&](std::vector<double> v) {
    for (double& x : v) x *= slowdown;
    return make_metric("copy_time", "ns", "lower", std::move(v));
  };
  return make_result(
      {make_scenario(
           "transfer-size", "transfer",
           {make_case("bytes=1MiB", {bw({20, 21, 22, 23}), t({47e3, 48e3, 50e3, 52e3})}),
            make_case("bytes=64MiB", {bw({24, 25, 25, 26}), t({2.6e6, 2.7e6, 2.7e6, 2.8e6})}),
            failed}),
       make_scenario("allocator-fragmentation", "allocator",
                     {make_case("config=default", {counter})})},
      "cuda", "NVIDIA H200", "GPU-1");
}

// The references as a vector: a braced `{one_json}` would be a copy under clang (CWG 2137)
// and an array under g++.
ordered_json refs_doc(const std::vector<ordered_json>& references,
                      ordered_json select = {{"device", "NVIDIA H*"}}) {
  return {{"schema", "pinbench.references/1"},
          {"systems", ordered_json::array({{{"name", "h-nodes"},
                                            {"select", std::move(select)},
                                            {"references", ordered_json(references)}}})}};
}

ordered_json ref(std::string scenario, std::string case_pattern, std::string metric, double value,
                 ordered_json lower, ordered_json upper, std::string unit) {
  return {{"scenario", std::move(scenario)}, {"case", std::move(case_pattern)},
          {"metric", std::move(metric)},     {"value", value},
          {"lower", std::move(lower)},       {"upper", std::move(upper)},
          {"unit", std::move(unit)}};
}

gate::reference_report check(const result::run_result& r, const ordered_json& doc,
                             gate::check_options opts = {}) {
  return gate::check_references(r, "r.json", gate::parse_references(doc, "refs.json"), opts);
}

// The message of the input_error that parsing `doc` throws ("" when it parses).
std::string refusal(const ordered_json& doc) {
  try {
    (void)gate::parse_references(doc, "refs.json");
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("check: a malformed REFS file is refused with its JSON path", "[gate][reference]") {
  const auto good = ref("transfer-size", "*", "bandwidth", 25, -0.1, nullptr, "GB/s");
  CHECK(refusal(refs_doc({good})).empty());
  CHECK(refusal(ordered_json::array()) == "refs.json: expected an object, got an array");
  auto doc = refs_doc({good});
  doc["schema"] = "pinbench.refs/0";
  CHECK(refusal(doc) ==
        "refs.json: schema: expected \"pinbench.references/1\", got \"pinbench.refs/0\"");
  doc = refs_doc({good});
  doc["systems"] = ordered_json::array();
  CHECK(refusal(doc).starts_with("refs.json: systems: expected a non-empty array"));
  CHECK(refusal(refs_doc({good}, {{"gpu", "H200"}})) ==
        "refs.json: systems[0].select.gpu: unknown key; expected \"device\", \"backend\" or "
        "\"host\"");
  CHECK(refusal(refs_doc({good}, {{"backend", "rocm"}})) ==
        "refs.json: systems[0].select.backend: expected \"cuda\" or \"host\", got \"rocm\"");
  CHECK(refusal(refs_doc({}))
            .starts_with("refs.json: systems[0].references: expected a non-empty array"));
  auto bad = good;
  bad["value"] = "25";
  CHECK(refusal(refs_doc({bad})) ==
        "refs.json: systems[0].references[0].value: expected a number, got a string");
  bad = good;
  bad["lower"] = 0.1;
  CHECK(refusal(refs_doc({bad}))
            .starts_with(
                "refs.json: systems[0].references[0].lower: expected a fraction in [-1, 0]"));
  bad = good;
  bad["lower"] = -1.5;
  CHECK(refusal(refs_doc({bad})).find("got -1.5") != std::string::npos);
  bad = good;
  bad["upper"] = -0.1;
  CHECK(refusal(refs_doc({bad}))
            .starts_with(
                "refs.json: systems[0].references[0].upper: expected a fraction of 0 or more"));
  bad = good;
  bad["lowr"] = -0.1;
  CHECK(refusal(refs_doc({bad})) ==
        "refs.json: systems[0].references[0].lowr: unknown key; expected \"scenario\", \"case\", "
        "\"metric\", \"value\", \"lower\", \"upper\" or \"unit\" (did you mean \"lower\"?)");
  bad = good;
  bad.erase("scenario");
  CHECK(refusal(refs_doc({bad})) ==
        "refs.json: systems[0].references[0].scenario: missing; expected a string");
  bad = good;
  bad.erase("unit");
  CHECK(refusal(refs_doc({bad})) ==
        "refs.json: systems[0].references[0].unit: missing; expected a string");
  // A negative reference (a figure that is below zero when healthy) takes upper <= 1.
  bad = good;
  bad["value"] = -3;
  bad["upper"] = 2;
  CHECK(refusal(refs_doc({bad})).find("in [0, 1] for a negative value") != std::string::npos);
}

TEST_CASE("check: bounds are ReFrame's fractions of the value", "[gate][reference]") {
  gate::reference r;
  r.value = 100;
  r.lower = -0.1;
  r.upper = 0.05;
  CHECK(*r.lower_bound() == Approx(90));
  CHECK(*r.upper_bound() == Approx(105));
  r.upper.reset();
  CHECK_FALSE(r.upper_bound());
  r.value = -10;  // a negative reference: the bounds still lie below and above it
  r.lower = -0.1;
  r.upper = 0.1;
  CHECK(*r.lower_bound() == Approx(-11));
  CHECK(*r.upper_bound() == Approx(-9));
}

TEST_CASE("check: figures inside, outside, failed and missing decide the exit code",
          "[gate][reference]") {
  const auto inside = ref("transfer-size", "bytes=64MiB", "bandwidth", 25, -0.1, 0.1, "GB/s");
  const auto rep = check(node_run(), refs_doc({inside}));
  REQUIRE(rep.checks.size() == 1);
  CHECK(rep.checks[0].outcome == gate::check_outcome::inside);
  CHECK(*rep.checks[0].measured == 25);
  CHECK(rep.exit_code() == 0);
  CHECK(rep.systems == std::vector<std::string>{"h-nodes"});

  // Twice as slow: the bandwidth falls below its lower bound, named with value and bounds.
  const auto slow = check(node_run(2), refs_doc({inside}));
  CHECK(slow.exit_code() == 1);
  CHECK(slow.checks[0].outcome == gate::check_outcome::outside);
  CHECK(slow.checks[0].reason ==
        "12.5 GB/s is 44.4% below the lower bound 22.5 GB/s (reference 25 GB/s -10.0%)");
  CHECK(slow.outcome_line().find("transfer-size bytes=64MiB bandwidth") != std::string::npos);

  // A pattern judges every case it matches; the failed one fails the check.
  const auto all_sizes =
      check(node_run(),
            refs_doc({ref("transfer-size", "bytes=*", "bandwidth", 23, -0.2, nullptr, "GB/s")}));
  REQUIRE(all_sizes.checks.size() == 3);
  CHECK(all_sizes.count(gate::check_outcome::inside) == 2);
  CHECK(all_sizes.checks[2].outcome == gate::check_outcome::failed);
  CHECK(all_sizes.checks[2].reason == "the case failed: out of memory");
  CHECK(all_sizes.exit_code() == 1);

  // A case that is not there is missing (exit 0 with something inside; 3 when strict); a
  // scenario that did not run is listed, never a failure.
  const auto partial =
      check(node_run(),
            refs_doc({inside, ref("transfer-size", "bytes=4KiB", "bandwidth", 1, -0.1, 0.1, "GB/s"),
                      ref("loader-workers", "*", "gpu_busy", 0.9, -0.05, nullptr, "fraction")}));
  CHECK(partial.count(gate::check_outcome::missing) == 1);
  CHECK(partial.not_run == std::vector<std::string>{"loader-workers: * gpu_busy"});
  CHECK(partial.exit_code() == 0);
  CHECK(check(node_run(),
              refs_doc(
                  {inside, ref("transfer-size", "bytes=4KiB", "bandwidth", 1, -0.1, 0.1, "GB/s")}),
              gate::check_options{true})
            .exit_code() == 3);
  // Nothing referenced measured: exit 3.
  CHECK(check(node_run(),
              refs_doc({ref("loader-workers", "*", "gpu_busy", 0.9, -0.05, nullptr, "fraction")}))
            .exit_code() == 3);
  // A deterministic counter referenced exactly.
  const auto exact = ref("allocator-fragmentation", "*", "num_ooms", 0, 0, 0, "count");
  CHECK(check(node_run(), refs_doc({exact})).exit_code() == 0);
  auto oom = node_run();
  oom.scenarios[1].cases[0].metrics[0].samples = {1};
  const auto ooms = check(oom, refs_doc({exact}));
  CHECK(ooms.exit_code() == 1);
  CHECK(ooms.checks[0].reason == "1 is above the upper bound 0 (reference 0 +0.0%)");
}

TEST_CASE("check: references for another system do not apply (exit 3)", "[gate][reference]") {
  const auto r = ref("transfer-size", "*", "bandwidth", 25, -0.1, nullptr, "GB/s");
  const auto rep = check(node_run(), refs_doc({r}, {{"device", "NVIDIA A100*"}}));
  CHECK(rep.systems.empty());
  CHECK(rep.exit_code() == 3);
  CHECK(rep.outcome_line() ==
        "no system of refs.json applies to this result (backend cuda, device \"NVIDIA H200\"); "
        "the file has: h-nodes (device NVIDIA A100*) (exit 3)");
  CHECK(check(node_run(), refs_doc({r}, {{"backend", "host"}})).exit_code() == 3);
  const auto one_size = ref("transfer-size", "bytes=64MiB", "bandwidth", 25, -0.1, nullptr, "GB/s");
  CHECK(check(node_run(), refs_doc({one_size}, ordered_json::object())).exit_code() == 0);  // any
}

TEST_CASE("check: under a launch each rank is judged on its own host", "[gate][reference]") {
  auto r = node_run();
  const auto one = r.scenarios[0].cases[1];  // bytes=64MiB
  std::vector<result::case_result> launched;
  for (int rank = 0; rank < 2; ++rank) {
    auto c = one;
    c.rank = rank;
    c.id = "rank=" + std::to_string(rank) + ",bytes=64MiB";
    if (rank == 1)  // node-b's copies are slow
      for (double& x : c.metrics[0].samples) x /= 2;
    launched.push_back(std::move(c));
  }
  r.scenarios[0].cases = launched;
  r.ranks = nlohmann::json::array({{{"rank", 0},
                                    {"host", "node-a"},
                                    {"backend", "cuda"},
                                    {"device", {{"name", "NVIDIA H200"}}}},
                                   {{"rank", 1},
                                    {"host", "node-b"},
                                    {"backend", "cuda"},
                                    {"device", {{"name", "NVIDIA H200"}}}}});
  const auto bw = ref("transfer-size", "bytes=64MiB", "bandwidth", 25, -0.1, nullptr, "GB/s");
  const auto both = check(r, refs_doc({bw}));
  REQUIRE(both.checks.size() == 2);
  CHECK(both.checks[0].outcome == gate::check_outcome::inside);
  CHECK(both.checks[1].case_id == "rank=1,bytes=64MiB");
  CHECK(both.checks[1].outcome == gate::check_outcome::outside);
  // A selector for node-a alone judges rank 0 only.
  const auto a = check(r, refs_doc({bw}, {{"device", "NVIDIA H200"}, {"host", "node-a"}}));
  REQUIRE(a.checks.size() == 1);
  CHECK(a.exit_code() == 0);
}

TEST_CASE("check: a unit that differs from the result's is refused", "[gate][reference]") {
  try {
    (void)check(node_run(),
                refs_doc({ref("transfer-size", "*", "bandwidth", 25000, -0.1, nullptr, "MB/s")}));
    FAIL("no error");
  } catch (const input_error& e) {
    CHECK(std::string(e.what()) ==
          "refs.json: systems[0].references[0].unit: expected \"GB/s\", the unit of bandwidth in "
          "r.json, got \"MB/s\"");
  }
}

TEST_CASE("check --init: references from a known-good result pass it and catch a slow one",
          "[gate][reference]") {
  const auto r = node_run();
  std::size_t left_out = 0;
  gate::init_options opts;
  const auto doc = gate::init_references(r, opts, report::headline_metrics, left_out);
  const auto& sys = doc["systems"][0];
  CHECK(sys["select"] == ordered_json{{"device", "NVIDIA H200"}, {"backend", "cuda"}});
  const auto& refs = sys["references"];
  REQUIRE(refs.size() == 5);  // 2 sizes x (bandwidth, copy_time), num_ooms
  // bandwidth of 64 MiB: median 25, quartiles 24.75 and 25.25: 2 x 1% is under the 10% floor.
  CHECK(refs[2] == ordered_json{{"scenario", "transfer-size"},
                                {"case", "bytes=64MiB"},
                                {"metric", "bandwidth"},
                                {"value", 25.0},
                                {"lower", -0.1},
                                {"upper", 0.1},
                                {"unit", "GB/s"}});
  CHECK(refs[4]["lower"] == 0);
  CHECK(refs[4]["upper"] == 0);
  CHECK(left_out == 0);
  CHECK(gate::check_references(r, "r.json", gate::parse_references(doc, "refs.json")).exit_code() ==
        0);
  const auto slow =
      gate::check_references(node_run(2), "r.json", gate::parse_references(doc, "refs.json"));
  CHECK(slow.exit_code() == 1);
  CHECK(slow.count(gate::check_outcome::outside) == 4);

  // One-sided: only the worse side bounded; widen scales the spread past the floor.
  opts.one_sided = true;
  opts.widen = 20;
  const auto one = gate::init_references(r, opts, report::headline_metrics, left_out);
  const auto& bw = one["systems"][0]["references"][2];
  CHECK(bw["lower"] == -0.2);  // 20 x 0.25 / 25
  CHECK(bw["upper"].is_null());
  CHECK(one["systems"][0]["references"][3]["lower"].is_null());  // copy_time: lower is better

  // A timed figure at 0 cannot be bounded by fractions of it.
  auto zero = node_run();
  zero.scenarios[0].cases[0].metrics[0].samples = {0, 0, 0};
  (void)gate::init_references(zero, {}, report::headline_metrics, left_out);
  CHECK(left_out == 1);
}

TEST_CASE("check: the writers match their golden files", "[gate][reference]") {
  const auto rep =
      check(node_run(2),
            refs_doc({ref("transfer-size", "bytes=*", "bandwidth", 23, -0.1, nullptr, "GB/s"),
                      ref("transfer-size", "bytes=64MiB", "copy_time", 5.4e6, -0.1, 0.1, "ns"),
                      ref("transfer-size", "bytes=4KiB", "copy_time", 1e4, -0.1, 0.1, "ns"),
                      ref("loader-workers", "*", "gpu_busy", 0.9, -0.05, nullptr, "fraction")}));
  testing::check_golden("check_table.txt", gate::to_table(rep));
  testing::check_golden("check.md", gate::to_markdown(rep));
  testing::check_golden("check_junit.xml", gate::to_junit(rep));
  testing::check_golden("check.json", gate::to_json(rep).dump(2) + "\n");
}

TEST_CASE("check: the command's exit codes and refusals", "[gate][reference]") {
  const testing::scratch_dir dir("check");
  const auto result_file = dir.path() / "r.json";
  const auto slow_file = dir.path() / "slow.json";
  testing::write_result(result_file, node_run());
  testing::write_result(slow_file, node_run(2));
  const auto refs = (dir.path() / "refs.json").string();
  const auto init = testing::run_cli_in_process(
      {"check", "--init", result_file.string(), "--widen", "2", "--out", refs}, dir.path());
  REQUIRE(init.code == 0);
  CHECK(init.err.find("5 reference(s) for NVIDIA H200, cuda backend written to") !=
        std::string::npos);
  const auto pass =
      testing::run_cli_in_process({"check", result_file.string(), "--reference", refs}, dir.path());
  CHECK(pass.code == 0);
  CHECK(pass.out.find("all 5 referenced figure(s) inside their references (exit 0)") !=
        std::string::npos);
  const auto junit = (dir.path() / "j.xml").string(), md = (dir.path() / "c.md").string();
  const auto fail = testing::run_cli_in_process({"check", slow_file.string(), "--reference", refs,
                                                 "--junit", junit, "--md", md, "--format", "json"},
                                                dir.path());
  CHECK(fail.code == 1);
  CHECK(nlohmann::json::parse(fail.out).at("exit_code") == 1);
  CHECK(fail.err.find("outside their references: farthest transfer-size bytes=") !=
        std::string::npos);
  CHECK(std::filesystem::exists(junit));
  CHECK(std::filesystem::exists(md));
  // Refusals: exit 2, one line.
  const auto none = testing::run_cli_in_process({"check", result_file.string()}, dir.path());
  CHECK(none.code == 2);
  CHECK(none.err.find("--reference") != std::string::npos);
  CHECK(testing::run_cli_in_process({"check", "--init", result_file.string(), "--reference", refs},
                                    dir.path())
            .code == 2);
  CHECK(testing::run_cli_in_process(
            {"check", result_file.string(), "--reference", refs, "--widen", "3"}, dir.path())
            .code == 2);
  CHECK(testing::run_cli_in_process(
            {"check", result_file.string(), "--reference", refs, "--out", refs}, dir.path())
            .code == 2);  // an output never replaces an input
  CHECK(testing::run_cli_in_process({"check", "--init", result_file.string(), "--floor", "150%"},
                                    dir.path())
            .code == 2);
  std::ofstream(dir.path() / "broken.json") << "{\"schema\": ";
  const auto broken = testing::run_cli_in_process(
      {"check", result_file.string(), "--reference", (dir.path() / "broken.json").string()},
      dir.path());
  CHECK(broken.code == 2);
  CHECK(broken.err.find("broken.json: not valid JSON") != std::string::npos);
}

}  // namespace pinbench::reference_test
