// The result writers and reader: JSON round trip, golden table/CSV/Markdown, error paths.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "gate/fixtures.hpp"
#include "golden.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"
#include "result/result_io.hpp"

using namespace pinbench;
using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

using pinbench::testing::check_golden;

namespace {

const std::string long_error =
    "cudaHostRegister failed: operation not permitted (error 800); RLIMIT_MEMLOCK is 8 MiB, "
    "below the 1 MiB | 64 MiB buffers asked for; raise it with `ulimit -l unlimited`";

using testing::make_metric;

// Two scenarios: a transfer one (ok, ok with warnings, error) and one of a kind the report
// does not know. Fixed timestamp and environment so that every output is deterministic.
result::run_result sample_run() {
  result::run_result r;
  r.tool_version = "0.1.0";
  r.tool_git = "abc1234";
  r.created = "2026-11-30T20:00:00Z";
  r.backend = "host";
  r.environment = {
      {"backend", "host"},
      {"device",
       {{"name", "host-emulated device"}, {"emulated", true}, {"memory_bytes", 8589934592ULL}}},
      {"host",
       {{"cpu", "Test CPU @ 3.00GHz"},
        {"cores", 2},
        {"memory_bytes", 17179869184ULL},
        {"hostname", "testhost"}}},
      {"warnings", {"mlock failed: pinned memory is not page-locked"}}};
  r.overrides = {{"copies_per_sample", "2"}};
  r.seed = 42;
  r.command_line = "pinbench run scenarios/h2d.json --set copies_per_sample=2 --seed 42";

  result::scenario_result t;
  t.name = "h2d-pinned-vs-pageable";
  t.description = "pinned vs pageable host memory";
  t.kind = "transfer";
  t.source = "scenarios/h2d.json";
  t.gate = {{"bandwidth", {{"threshold", 0.05}}}};

  result::case_result pinned;
  pinned.id = "memory=pinned,bytes=1MiB";
  pinned.params = {
      {"direction", "h2d"}, {"memory", "pinned"}, {"mode", "non_blocking"}, {"bytes", "1MiB"}};
  pinned.metrics = {make_metric("bandwidth", "GB/s", "higher", {24.1, 24.5, 24.3, 24.4}),
                    make_metric("copy_time", "ns", "lower", {43500, 42800, 43100, 43000}),
                    make_metric("host_call_time", "ns", "lower", {2100, 2050, 2200, 2080}),
                    make_metric("overlap", "fraction", "higher", {0.91, 0.93, 0.92, 0.95}),
                    // bandwidth / link_ceiling.gbps, sample by sample
                    make_metric("link_fraction", "fraction", "", {0.7651, 0.7778, 0.7714, 0.7746})};
  pinned.stopped = result::stop_reason::converged;
  pinned.elapsed_s = 0.25;
  const nlohmann::json ceiling = {
      {"gbps", 31.5},
      {"source",
       "host memcpy of 1 MiB measured in this run: 31.5 GB/s (the best of 40 timings, "
       "before, between and after the samples)"}};
  pinned.extra = {{"verified", true}, {"link_ceiling", ceiling}};

  result::case_result pageable;
  pageable.id = "memory=pageable,bytes=1MiB";
  pageable.params = {
      {"direction", "h2d"}, {"memory", "pageable"}, {"mode", "non_blocking"}, {"bytes", "1MiB"}};
  pageable.metrics = {make_metric("bandwidth", "GB/s", "higher", {11.2, 11.9, 11.5}),
                      make_metric("copy_time", "ns", "lower", {89000, 91000, 90500}),
                      make_metric("host_call_time", "ns", "lower", {88000, 90000, 89500}),
                      make_metric("link_fraction", "fraction", "", {0.3556, 0.3778, 0.3651})};
  pageable.extra = {{"link_ceiling", ceiling}};
  pageable.stopped = result::stop_reason::max_samples;
  pageable.elapsed_s = 1.5;
  pageable.warnings = {"noise 3.1% above max_noise 1%"};

  result::case_result failed;
  failed.id = "memory=registered,bytes=1MiB";
  failed.params = {
      {"direction", "h2d"}, {"memory", "registered"}, {"mode", "non_blocking"}, {"bytes", "1MiB"}};
  failed.status = result::case_status::error;
  failed.message = long_error;
  failed.elapsed_s = 0.01;

  t.cases = {pinned, pageable, failed};

  result::scenario_result c;
  c.name = "widgets";
  c.description = "a kind the report knows nothing about";
  c.kind = "custom";
  c.source = "tests/widgets.json";

  result::case_result quoted;
  quoted.id = "label=a,\"b\"";
  quoted.params = {{"label", "a,\"b\""}, {"depth", 3}, {"nested", {{"x", 1}}}};
  // Insertion order differs from alphabetical order on purpose.
  quoted.metrics = {make_metric("widgets", "count", "higher", {3, 3, 3}),
                    make_metric("latency", "ns", "lower", {1500, 1700}),
                    make_metric("ratio", "fraction", "", {0.25})};
  quoted.stopped = result::stop_reason::single;

  result::case_result plain;
  plain.id = "label=plain";
  plain.params = {{"label", "plain"}, {"depth", 4}};
  plain.metrics = {make_metric("latency", "ns", "lower", {1600}),
                   make_metric("widgets", "count", "higher", {4}),
                   make_metric("spill", "bytes", "lower", {4096})};
  plain.stopped = result::stop_reason::single;

  c.cases = {quoted, plain};
  r.scenarios = {t, c};
  return r;
}

bool all_finite(const ordered_json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j)
      if (!all_finite(v)) return false;
  return true;
}

std::string error_of(const ordered_json& j, const std::string& source) {
  try {
    (void)result::from_json(j, source);
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> keys_of(const ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("result JSON has the pinbench.result/1 shape", "[report]") {
  const auto j = result::to_json(sample_run());
  CHECK(j["schema"] == "pinbench.result/1");
  CHECK(j["tool"] == ordered_json{{"name", "pinbench"}, {"version", "0.1.0"}, {"git", "abc1234"}});
  CHECK(j["seed"] == 42);
  CHECK(j["interrupted"] == false);
  CHECK(j["overrides"]["copies_per_sample"] == "2");
  CHECK(j["environment"]["backend"] == "host");
  CHECK(j["environment"]["warnings"].size() == 1);

  const auto& t = j["scenarios"][0];
  CHECK(t["gate"]["bandwidth"]["threshold"] == 0.05);
  const auto& pinned = t["cases"][0];
  CHECK(pinned["stop_reason"] == "converged");
  CHECK(pinned["info"]["verified"] == true);
  CHECK_FALSE(pinned.contains("message"));
  CHECK_FALSE(pinned.contains("warnings"));
  const auto& bw = pinned["metrics"]["bandwidth"];
  CHECK(bw["unit"] == "GB/s");
  CHECK(bw["better"] == "higher");
  CHECK(bw["summary"]["n"] == 4);
  CHECK(bw["summary"]["median"].is_number());
  CHECK(bw["summary"]["median"].get<double>() == Approx(24.35));
  CHECK(bw["summary"]["min"] == 24.1);
  CHECK(bw["samples"] == ordered_json{24.1, 24.5, 24.3, 24.4});

  const auto& failed = t["cases"][2];
  CHECK(failed["status"] == "error");
  CHECK(failed["message"] == long_error);  // the whole message, not the table's cut
  CHECK(failed["metrics"].empty());
  CHECK_FALSE(failed.contains("info"));
  CHECK(t["cases"][1]["warnings"][0] == "noise 3.1% above max_noise 1%");
  CHECK_FALSE(j["scenarios"][1].contains("gate"));

  // The metrics object keeps the order the engine recorded, not alphabetical order.
  CHECK(keys_of(t["cases"][0]["metrics"]) == std::vector<std::string>{"bandwidth", "copy_time",
                                                                      "host_call_time", "overlap",
                                                                      "link_fraction"});
  CHECK(keys_of(j["scenarios"][1]["cases"][0]["metrics"]) ==
        std::vector<std::string>{"widgets", "latency", "ratio"});
  CHECK(keys_of(j).front() == "schema");

  check_golden("report.json", j.dump(2) + "\n");
}

TEST_CASE("result JSON reads back to the same document", "[report]") {
  const auto run = sample_run();
  const auto first = result::to_json(run);
  const auto text = first.dump(2);

  SECTION("parsed keeping key order") {
    const auto back = result::from_json(ordered_json::parse(text), "mem.json");
    CHECK(result::to_json(back) == first);
    CHECK(back.scenarios[1].cases[0].metrics[0].name == "widgets");
    CHECK(back.backend == "host");
    CHECK(back.seed == 42);
    CHECK(back.scenarios[0].cases[1].stopped == result::stop_reason::max_samples);
    CHECK(back.scenarios[0].cases[0].extra == run.scenarios[0].cases[0].extra);
    CHECK(back.scenarios[0].cases[0].extra.at("link_ceiling").at("gbps") == 31.5);
    CHECK(report::to_table(back) == report::to_table(run));
    CHECK(report::to_csv(back) == report::to_csv(run));
  }
  SECTION("parsed as nlohmann::json (keys sorted)") {
    const auto back = result::from_json(json::parse(text), "mem.json");
    CHECK(json(result::to_json(back)) == json(first));
  }
}

TEST_CASE("result JSON never holds NaN or infinity", "[report]") {
  auto run = sample_run();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto& c = run.scenarios[0].cases[0];
  c.metrics[0].samples = {20.0, nan, inf, 22.0};
  c.elapsed_s = nan;
  c.extra["ratio"] = nan;
  c.params["limit"] = -inf;
  run.environment["device"]["clock_ghz"] = inf;

  const auto j = result::to_json(run);
  CHECK(all_finite(j));
  const auto text = j.dump();
  for (const char* bad : {"nan", "NaN", "Infinity", ":inf", ":-inf", "[inf", ",inf", ",-inf"})
    CHECK(text.find(bad) == std::string::npos);
  const auto& bw = j["scenarios"][0]["cases"][0]["metrics"]["bandwidth"];
  CHECK(bw["samples"][1].is_null());
  CHECK(bw["samples"][2].is_null());
  CHECK(bw["summary"]["n"] == 2);  // summarised over the finite samples
  CHECK(bw["summary"]["median"] == 21.0);
  CHECK(j["scenarios"][0]["cases"][0]["elapsed_s"].is_null());

  // Readers cope: null reads back as NaN, and every writer still works.
  const auto back = result::from_json(ordered_json::parse(text), "nan.json");
  const auto& samples = back.scenarios[0].cases[0].metrics[0].samples;
  REQUIRE(samples.size() == 4);
  CHECK(std::isnan(samples[1]));
  CHECK(std::isnan(back.scenarios[0].cases[0].elapsed_s));
  CHECK(result::to_json(back) == j);
  CHECK(report::to_table(back).find("21.00 \u00b16.7%") != std::string::npos);
  CHECK(report::to_csv(back).find("nan") == std::string::npos);
}

TEST_CASE("reading a result names the file and the JSON path of a problem", "[report]") {
  const auto good = result::to_json(sample_run());

  auto j = good;
  j["schema"] = "foo";
  CHECK(error_of(j, "old.json") == R"(old.json: schema: expected "pinbench.result/1", got "foo")");

  j = good;
  j["schema"] = "pinbench.scenario/1";
  CHECK(error_of(j, "s.json") ==
        R"(s.json: schema: expected "pinbench.result/1", got "pinbench.scenario/1")");

  j = good;
  j.erase("schema");
  CHECK(error_of(j, "r.json") == R"(r.json: schema: expected "pinbench.result/1", got nothing)");

  CHECK(error_of(ordered_json::array(), "r.json") ==
        "r.json: expected a pinbench.result/1 object, got an array");

  j = good;
  j["scenarios"][0]["cases"][1]["metrics"]["bandwidth"]["samples"][2] = "x";
  CHECK(
      error_of(j, "r.json") ==
      R"(r.json: scenarios[0].cases[1].metrics.bandwidth.samples[2]: expected a number, got "x")");

  j = good;
  j["scenarios"][0]["cases"][0]["metrics"]["overlap"]["samples"][0] = std::string(100, 'y');
  CHECK(error_of(j, "r.json") ==
        "r.json: scenarios[0].cases[0].metrics.overlap.samples[0]: "
        "expected a number, got \"" +
            std::string(39, 'y') + "\u2026\"");

  j = good;
  j.erase("scenarios");
  CHECK(error_of(j, "r.json") == "r.json: scenarios: missing (expected an array)");

  j = good;
  j["scenarios"][1].erase("kind");
  CHECK(error_of(j, "r.json") == "r.json: scenarios[1].kind: missing (expected a string)");

  j = good;
  j["scenarios"][0]["cases"][0]["stop_reason"] = "bored";
  CHECK(error_of(j, "r.json") ==
        R"(r.json: scenarios[0].cases[0].stop_reason: expected one of "converged", )"
        R"("max_samples", "timeout", "interrupted", "single", got "bored")");

  j = good;
  j["scenarios"][0]["cases"][0]["metrics"]["allocated_bytes.all.peak"] = {{"unit", 5}};
  CHECK(error_of(j, "r.json") ==
        R"(r.json: scenarios[0].cases[0].metrics["allocated_bytes.all.peak"].unit: )"
        "expected a string, got 5");

  j = good;
  j["seed"] = -1;
  CHECK(error_of(j, "r.json") == "r.json: seed: expected a non-negative integer, got -1");

  j = good;
  j["scenarios"][0]["cases"][2]["status"] = "meh";
  CHECK(error_of(j, "r.json") == R"(r.json: scenarios[0].cases[2].status: expected one of )"
                                 R"("ok", "error", "interrupted", "skipped", got "meh")");
}

TEST_CASE("reading a result ignores unknown fields and recomputes summaries", "[report]") {
  auto j = result::to_json(sample_run());
  j["from_the_future"] = {{"anything", 1}};
  j["scenarios"][0]["shiny"] = true;
  j["scenarios"][0]["cases"][0]["metrics"]["bandwidth"]["histogram"] = ordered_json::array();
  // A stale summary does not survive: the samples are the truth.
  j["scenarios"][0]["cases"][0]["metrics"]["bandwidth"]["summary"]["median"] = 999.0;
  const auto back = result::from_json(j, "r.json");
  const auto again = result::to_json(back);
  CHECK_FALSE(again.contains("from_the_future"));
  CHECK(again["scenarios"][0]["cases"][0]["metrics"]["bandwidth"]["summary"]["median"]
            .get<double>() == Approx(24.35));
}

TEST_CASE("the terminal table matches its golden file", "[report]") {
  const auto run = sample_run();
  const auto table = report::to_table(run, false);
  check_golden("report_table.txt", table);

  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.rfind("pinbench 0.1.0 \u00b7 backend: host (emulated device, not a GPU) \u00b7 "
                    "Test CPU @ 3.00GHz \u00b7 2026-11-30T20:00:00Z\n",
                    0) == 0);
  CHECK(table.find("warning: mlock failed") != std::string::npos);
  CHECK(table.find("== h2d-pinned-vs-pageable (transfer) \u2014 pinned vs pageable host memory") !=
        std::string::npos);
  CHECK(table.find("bandwidth GB/s") != std::string::npos);
  CHECK(table.find("overlap %") != std::string::npos);
  CHECK(table.find("pin_time") == std::string::npos);  // no case measured it
  CHECK(table.find("24.35 \u00b1") != std::string::npos);
  CHECK(table.find("43.05 us") != std::string::npos);
  // The message is cut in the table (it is whole in the JSON).
  CHECK(table.find("error: cudaHostRegister failed") != std::string::npos);
  CHECK(table.find("ulimit -l unlimited") == std::string::npos);
  CHECK(table.find("\u2026") != std::string::npos);
  CHECK(table.find("5 cases, 1 failed, 0 interrupted; backend: host \u2014 host-emulated "
                   "figures, not GPU figures\n") != std::string::npos);
}

TEST_CASE("the table shows a transfer's link_fraction as \"% of link\"", "[report]") {
  const auto table = report::to_table(sample_run());
  CHECK_THAT(table, Catch::Contains("bandwidth GB/s  % of link"));
  CHECK_THAT(table, Catch::Contains("77.3 ±0.5"));  // the pinned case's median, in percent
  CHECK_THAT(table, Catch::Contains("36.5 ±1.1"));
}

TEST_CASE("the coloured table adds ANSI colours only when asked", "[report]") {
  const auto table = report::to_table(sample_run(), true);
  CHECK(table.find("\x1b[1m") != std::string::npos);
  CHECK(table.find("\x1b[31merror: ") != std::string::npos);
  CHECK(table.find("\x1b[32mok\x1b[0m") != std::string::npos);
}

TEST_CASE("the table names a CUDA device with its link and driver", "[report]") {
  auto run = sample_run();
  run.backend = "cuda";
  run.environment = {
      {"backend", "cuda"},
      {"device",
       {{"name", "NVIDIA H200"}, {"driver", "570.86.15"}, {"pcie", {{"gen", 5}, {"width", 16}}}}},
      {"host", {{"cpu", "Test CPU"}}},
      {"timer", {{"clock", "steady_clock"}, {"read_ns", 18.26}}}};
  const auto table = report::to_table(run);
  // The timer's cost per read, the floor under every per-call nanosecond figure, is said too.
  CHECK(table.rfind("pinbench 0.1.0 \u00b7 backend: cuda \u00b7 NVIDIA H200 \u00b7 PCIe gen 5 x16 "
                    "\u00b7 driver 570.86.15 \u00b7 Test CPU \u00b7 timer 18.3 ns/read \u00b7 "
                    "2026-11-30T20:00:00Z\n",
                    0) == 0);
  CHECK(table.find("warning: mlock") == std::string::npos);
  CHECK(table.find("host-emulated") == std::string::npos);
  CHECK(table.find("; backend: cuda\n") != std::string::npos);
}

TEST_CASE("a kind the report does not know shows every metric", "[report]") {
  const auto table = report::to_table(sample_run());
  const auto at = table.find("== widgets (custom)");
  REQUIRE(at != std::string::npos);
  const auto header = table.substr(table.find('\n', at) + 1);
  // Metrics in the order they first appear, then n, stop and status.
  const auto w = header.find("widgets"), l = header.find("latency"), r = header.find("ratio %"),
             s = header.find("spill"), n = header.find("  n  ");
  CHECK(w < l);
  CHECK(l < r);
  CHECK(r < s);
  CHECK(s < n);
  CHECK(header.find("3 \u00b1") == std::string::npos);  // identical samples: no noise to show
  CHECK(header.find("4.00 KiB") == std::string::npos);
  CHECK(header.find("4 KiB") != std::string::npos);
}

TEST_CASE("CSV is long format with RFC 4180 quoting", "[report]") {
  const auto csv = report::to_csv(sample_run());
  check_golden("report.csv", csv);

  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  CHECK(header ==
        "scenario,kind,case,status,backend,bytes,depth,direction,label,memory,mode,nested.x,"
        "metric,unit,better,n,median,mean,min,max,q1,q3,stdev");
  // A param holding a comma and a quote is quoted, its quote doubled.
  CHECK(csv.find(R"(widgets,custom,"label=a,""b""",ok,host,,3,,"a,""b""",,,1,widgets,count,)"
                 R"(higher,3,3,3,3,3,3,3,0)") != std::string::npos);
  // The failed case has one row with empty metric fields.
  CHECK(csv.find("h2d-pinned-vs-pageable,transfer,\"memory=registered,bytes=1MiB\",error,host,1MiB,"
                 ",h2d,,registered,non_blocking,,,,,,,,,,,,\n") != std::string::npos);
  // Numbers keep full precision.
  CHECK(csv.find(",0.91,0.95,") != std::string::npos);
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line);) ++rows;
  CHECK(rows == 5 + 4 + 1 + 3 + 3);
}

TEST_CASE("Markdown matches its golden file", "[report]") {
  const auto md = report::to_markdown(sample_run());
  check_golden("report.md", md);
  CHECK(md.rfind("## pinbench 0.1.0 \u00b7 backend: host", 0) == 0);
  CHECK(md.find("\n### h2d-pinned-vs-pageable (transfer)") != std::string::npos);
  CHECK(md.find("| case | bandwidth GB/s |") != std::string::npos);
  CHECK(md.find("| :--- | ---: |") != std::string::npos);
  // The pipe in the message is escaped, and the message is whole.
  CHECK(md.find("1 MiB \\| 64 MiB") != std::string::npos);
  CHECK(md.find("ulimit -l unlimited") != std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
}

TEST_CASE("Markdown shows link and image syntax from inputs as text, never as a link", "[report]") {
  auto r = sample_run();
  auto& s = r.scenarios[1];
  s.description = "# see [the docs](http://x) <img src=x>";
  s.source = "odd`name.json";
  s.cases[0].id = "[click](http://x)";
  s.cases[1].id = "![x](http://y)";
  s.cases[1].warnings = {"`rm -rf` *now* ~~or~~ [later][1] &amp; <b>x</b> \\[y](z)"};
  const auto md = report::to_markdown(r);
  // Case ids in code spans, which show their text literally.
  CHECK(md.find("| `[click](http://x)` |") != std::string::npos);
  CHECK(md.find("| `![x](http://y)` |") != std::string::npos);
  // Elsewhere brackets are escaped: no link text runs into a "(" as a link.
  std::string outside_code;
  bool in_code = false;
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '`' && (i == 0 || md[i - 1] != '\\'))
      in_code = !in_code;
    else if (!in_code)
      outside_code += md[i];
  }
  for (auto at = outside_code.find("]("); at != std::string::npos;
       at = outside_code.find("](", at + 1))
    CHECK(outside_code[at - 1] == '\\');
  CHECK(md.find("(custom) \u2014 # see \\[the docs\\](http://x) &lt;img src=x>\n") !=
        std::string::npos);
  CHECK(md.find("- **warning:** !\\[x\\](http://y): \\`rm -rf\\` \\*now\\* \\~\\~or\\~\\~ "
                "\\[later\\]\\[1\\] &amp;amp; &lt;b>x&lt;/b> \\\\\\[y\\](z)\n") !=
        std::string::npos);
}

TEST_CASE(
    "rounds and the deterministic flag read back, a rounds list of the wrong length is an error",
    "[report][rounds]") {
  result::run_result r;
  r.tool_version = "0.1.0";
  r.backend = "host";
  r.repeat = 2;
  result::scenario_result s;
  s.name = "s";
  s.kind = "allocator";
  result::case_result c;
  c.id = "a";
  auto& t = c.add("alloc_latency", "ns", result::direction::lower);
  t.samples = {1, 2, 3, 4};
  t.rounds = {0, 0, 1, 1};
  auto& k = c.add("num_device_alloc", "count", result::direction::lower);
  k.samples = {12, 12};
  k.deterministic = true;
  k.rounds = {0, 1};
  s.cases.push_back(c);
  r.scenarios.push_back(s);
  const auto j = result::to_json(r);
  CHECK(j["repeat"] == 2);
  CHECK_FALSE(j["scenarios"][0]["cases"][0]["metrics"]["alloc_latency"].contains("deterministic"));
  CHECK(j["scenarios"][0]["cases"][0]["metrics"]["num_device_alloc"]["deterministic"] == true);
  const auto back = result::from_json(j, "r.json");
  CHECK(back.repeat == 2);
  const auto& m = back.scenarios[0].cases[0];
  CHECK(m.find("alloc_latency")->rounds == std::vector<std::uint32_t>{0, 0, 1, 1});
  CHECK(m.find("num_device_alloc")->deterministic);
  CHECK_FALSE(m.find("alloc_latency")->deterministic);

  auto bad = j;
  bad["scenarios"][0]["cases"][0]["metrics"]["alloc_latency"]["rounds"] = {0, 1};
  try {
    (void)result::from_json(bad, "r.json");
    FAIL("a short rounds list was accepted");
  } catch (const input_error& e) {
    const std::string what = e.what();
    CHECK(what.find("r.json") != std::string::npos);
    CHECK(what.find("rounds") != std::string::npos);
  }
}

TEST_CASE("a result file can come through a pipe, a FIFO without a writer does not wait",
          "[report]") {
  const auto dir =
      fs::temp_directory_path() / ("pinbench-report-pipe-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // As `pinbench report <(zcat r.json.gz)` passes it: /dev/fd/N of a pipe.
  int ends[2] = {-1, -1};
  REQUIRE(::pipe(ends) == 0);
  const std::string text = result::to_json(sample_run()).dump();
  REQUIRE(text.size() < 65536);  // fits in the pipe's buffer: written before it is read
  REQUIRE(::write(ends[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(ends[1]);
  const auto back = result::read_result_file("/dev/fd/" + std::to_string(ends[0]));
  ::close(ends[0]);
  CHECK(back.scenarios.size() == 2);

  const fs::path fifo = dir / "r.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto reading = std::async(std::launch::async, [&] {
    try {
      (void)result::read_result_file(fifo.string());
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  });
  if (reading.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
    FAIL("reading a FIFO waited for a writer");
  }
  CHECK_THAT(reading.get(), Catch::StartsWith(fifo.string() + ": not valid JSON"));
  // A device is no result file.
  CHECK_THROWS_WITH(result::read_result_file("/dev/zero"),
                    "/dev/zero: is a character device, expected a regular file");
  fs::remove_all(dir);
}

TEST_CASE("each report says under what conditions a scenario's figures were taken",
          "[report][conditions]") {
  result::scenario_result s;
  s.name = "t";
  s.kind = "transfer";
  for (int i = 0; i < 2; ++i) {
    auto c = testing::make_case(i == 0 ? "bytes=1MiB" : "bytes=16MiB",
                                {make_metric("bandwidth", "GB/s", "higher", {50, 51})});
    c.extra["link_ceiling"] = {{"gbps", 63.0},
                               {"source",
                                "PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per "
                                "direction"}};
    c.extra["telemetry"] = {
        {"device", 0},
        {"before", {{"sm_clock_mhz", 1980}, {"sm_clock_max_mhz", 1980}}},
        {"after", {{"sm_clock_mhz", i == 0 ? 1980 : 1410}, {"sm_clock_max_mhz", 1980}}},
        {"reasons_seen", i == 0 ? json::array({"gpu_idle"}) : json::array({"hw_thermal_slowdown"})},
        {"throttled", i == 1},
        {"discarded_samples", i == 1 ? 4 : 0}};
    c.extra["numa"] = {
        {"node", 1},
        {"cpus", "16-31"},
        {"placed", i == 0},
        {"requested", "auto"},
        {"reason", i == 0 ? "the GPU's node" : "the GPU's node; not placed: set_mempolicy: EPERM"}};
    s.cases.push_back(std::move(c));
  }
  const auto lines = report::detail::scenario_conditions(s);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "link ceiling: PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per direction");
  CHECK(lines[1] ==
        "GPU telemetry: 2 of 2 case(s) watched; SM clock 1410-1980 MHz of 1980 "
        "before and after them; 1 throttled (hw_thermal_slowdown); 4 sample(s) "
        "discarded and taken again");
  CHECK(lines[2] == "NUMA: 1 of 2 case(s) placed on node 1; not placed: set_mempolicy: EPERM");

  result::run_result r;
  r.backend = "cuda";
  r.scenarios.push_back(s);
  CHECK_THAT(report::to_html(r), Catch::Contains("<li>NUMA: 1 of 2 case(s) placed on node 1"));
  CHECK_THAT(report::to_markdown(r),
             Catch::Contains("- **conditions:** GPU telemetry: 2 of 2 case(s) watched"));

  SECTION("cases that record none of it give no conditions") {
    for (auto& c : s.cases) c.extra.clear();
    CHECK(report::detail::scenario_conditions(s).empty());
  }
  SECTION("a collective of one rank says why its busbw column is empty") {
    for (auto& c : s.cases) {
      c.extra.clear();
      c.extra["busbw_reason"] = "one rank: no data crosses a link, so there is no bus bandwidth";
    }
    CHECK(report::detail::scenario_conditions(s) ==
          std::vector<std::string>{
              "no busbw: one rank: no data crosses a link, so there is no bus bandwidth"});
  }
  SECTION("--numa none is said once, not as a failure") {
    for (auto& c : s.cases)
      c.extra["numa"] = {
          {"node", nullptr}, {"placed", false}, {"requested", "none"}, {"reason", "--numa none"}};
    CHECK(report::detail::scenario_conditions(s).back() ==
          "NUMA: no placement asked (--numa none)");
  }
}
