// `pinbench export`: Bencher's BMF, github-action-benchmark's arrays and Google Benchmark's JSON,
// byte for byte (golden files), deterministic, and the command's refusals. That compare.py reads
// the Google Benchmark export is tests/scripts/test_trackers.sh.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_in_process.hpp"
#include "gate/fixtures.hpp"
#include "golden.hpp"
#include "report/export.hpp"
#include "scratch_dir.hpp"

namespace pinbench::export_test {

namespace {

using testing::make_case;
using testing::make_metric;
using testing::make_result;
using testing::make_scenario;

// One scenario: a rate (higher), a time (lower) and a counter (no direction); a failed case.
result::run_result tracked_run() {
  auto failed = make_case("bytes=1MiB", {make_metric("bandwidth", "GB/s", "higher", {1, 2})});
  failed.status = result::case_status::error;
  return make_result({make_scenario(
      "transfer-size", "transfer",
      {make_case("bytes=64MiB",
                 {make_metric("bandwidth", "GB/s", "higher", {24.1, 24.3, 24.4, 24.9}),
                  make_metric("copy_time", "ns", "lower", {2.6e6, 2.7e6, 2.8e6}),
                  make_metric("retries", "count", "", {0, 0, 0})}),
       failed})});
}

// For Google Benchmark: a time metric with a rate and a fraction from the same samples, an item
// rate, a deterministic counter measured once, a metric that shares no time metric's samples,
// and a case with no time metric at all.
result::run_result benchmark_run() {
  auto counter = make_metric("reserved_bytes.all.peak", "bytes", "lower", {4194304});
  counter.deterministic = true;
  auto r = make_result(
      {make_scenario(
           "transfer-size", "transfer",
           {make_case("bytes=64MiB",
                      {make_metric("bandwidth", "GB/s", "higher", {24.0, 25.0, 26.0}),
                       make_metric("copy_time", "ns", "lower", {2.8e6, 2.7e6, 2.6e6}),
                       make_metric("overlap", "fraction", "higher", {0.5, 0.6, 0.7}),
                       make_metric("host_call_time", "ns", "lower", {1000, 1100}), counter,
                       make_metric("epoch_samples", "samples/s", "higher", {900, 950})})}),
       make_scenario("loader", "loader",
                     {make_case("num_workers=2",
                                {make_metric("gpu_busy", "fraction", "higher", {0.9, 0.95})})})});
  r.environment["host"] = {{"hostname", "node-a"}, {"cores", 2}, {"cpu_mhz", 2095.993}};
  return r;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("export: bmf and github-action-benchmark match their golden files", "[report][export]") {
  const auto r = tracked_run();
  testing::check_golden("export_bmf.json", report::to_bmf(r));
  const auto arrays = report::to_github_action_benchmark(r);
  testing::check_golden("export_gab_bigger.json", arrays.bigger);
  testing::check_golden("export_gab_smaller.json", arrays.smaller);
  CHECK(arrays.left_out == 1);  // the counter
  // Same result, same bytes.
  CHECK(report::to_bmf(r) == report::to_bmf(tracked_run()));
}

TEST_CASE("export: google-benchmark matches its golden file", "[report][export]") {
  const auto doc = report::to_google_benchmark(benchmark_run());
  testing::check_golden("export_google_benchmark.json", doc.json);
  // epoch_samples rides on host_call_time (2 samples each); gpu_busy's case has no time metric.
  CHECK(doc.left_out == 1);
  CHECK(report::to_google_benchmark(benchmark_run()).json == doc.json);
}

TEST_CASE("export: google-benchmark entries are what compare.py reads", "[report][export]") {
  const auto doc = nlohmann::json::parse(report::to_google_benchmark(benchmark_run()).json);
  const auto& ctx = doc.at("context");
  CHECK(ctx.at("json_schema_version") == 1);
  CHECK(ctx.at("host_name") == "node-a");
  CHECK(ctx.at("num_cpus") == 2);
  CHECK(ctx.at("mhz_per_cpu") == 2096);
  CHECK(ctx.at("date") == "2026-01-01T00:00:00+00:00");
  CHECK(ctx.at("pinbench_backend") == "host");
  CHECK(ctx.at("pinbench_emulated") == true);
  std::size_t iterations = 0, aggregates = 0;
  for (const auto& b : doc.at("benchmarks")) {
    CHECK(b.at("real_time").is_number());
    CHECK(b.at("cpu_time") == b.at("real_time"));
    CHECK(b.at("time_unit") == "ns");
    if (b.at("run_type") == "iteration") {
      ++iterations;
      CHECK(b.at("repetition_index").get<int>() < b.at("repetitions").get<int>());
    } else {
      ++aggregates;
      CHECK(b.at("run_type") == "aggregate");
      CHECK(b.at("name").get<std::string>().ends_with("_" +
                                                      b.at("aggregate_name").get<std::string>()));
    }
  }
  CHECK(iterations == 5);  // copy_time 3, host_call_time 2
  CHECK(aggregates == 8);
  const auto& first = doc.at("benchmarks").at(0);
  CHECK(first.at("name") == "transfer-size/bytes=64MiB/copy_time");
  CHECK(first.at("bytes_per_second") == 24e9);
  CHECK(first.at("overlap (fraction)") == 0.5);
  CHECK(first.at("reserved_bytes.all.peak (bytes)") == 4194304);
}

TEST_CASE("export: every leaf has what the tracker reads", "[report][export]") {
  const auto bmf = nlohmann::json::parse(report::to_bmf(tracked_run()));
  REQUIRE(bmf.is_object());
  CHECK_FALSE(bmf.contains("transfer-size/bytes=1MiB"));  // a failed case is not a figure
  for (const auto& [key, measures] : bmf.items()) {
    REQUIRE(measures.is_object());
    for (const auto& [name, leaf] : measures.items()) {
      CHECK(leaf.at("value").is_number());
      CHECK(leaf.at("lower_value").get<double>() <= leaf.at("value").get<double>());
      CHECK(leaf.at("upper_value").get<double>() >= leaf.at("value").get<double>());
    }
  }
  const auto arrays = report::to_github_action_benchmark(tracked_run());
  for (const auto& text : {arrays.bigger, arrays.smaller}) {
    const auto items = nlohmann::json::parse(text);
    REQUIRE(items.is_array());
    REQUIRE(items.size() == 1);
    for (const auto& item : items) {
      CHECK(item.at("name").is_string());
      CHECK(item.at("unit").is_string());
      CHECK(item.at("value").is_number());
      CHECK(item.at("extra").get<std::string>().find("backend: host (emulated)") !=
            std::string::npos);
    }
  }
}

TEST_CASE("export: the command writes the files and refuses what it cannot do",
          "[report][export]") {
  const testing::scratch_dir dir("export");
  const auto input = dir.path() / "r.json";
  testing::write_result(input, tracked_run());
  const auto prefix = (dir.path() / "bench").string();
  REQUIRE(testing::run_cli_in_process({"export", input.string(), "--format",
                                       "github-action-benchmark", "--out", prefix, "-q"},
                                      dir.path())
              .code == 0);
  CHECK(read_text(prefix + "-bigger.json") ==
        report::to_github_action_benchmark(tracked_run()).bigger);
  const auto bmf =
      testing::run_cli_in_process({"export", input.string(), "--format", "bmf"}, dir.path());
  CHECK(bmf.code == 0);
  CHECK(bmf.out == report::to_bmf(tracked_run()));
  // Two files cannot go to stdout.
  const auto to_stdout = testing::run_cli_in_process(
      {"export", input.string(), "--format", "github-action-benchmark"}, dir.path());
  CHECK(to_stdout.code == 2);
  CHECK(to_stdout.err.find("--out") != std::string::npos);
  // The input is never replaced.
  const auto over = testing::run_cli_in_process(
      {"export", input.string(), "--format", "bmf", "--out", input.string()}, dir.path());
  CHECK(over.code == 2);
  CHECK(
      testing::run_cli_in_process({"export", input.string(), "--format", "csv"}, dir.path()).code ==
      2);
  const auto gbench =
      testing::run_cli_in_process({"export", input.string(), "--format", "google-benchmark",
                                   "--out", (dir.path() / "gb.json").string()},
                                  dir.path());
  CHECK(gbench.code == 0);
  CHECK(read_text(dir.path() / "gb.json") == report::to_google_benchmark(tracked_run()).json);
  // bandwidth has 4 samples, copy_time 3: nothing to ride on (retries does, 3 and 3).
  CHECK(gbench.err.find("1 metric(s) left out") != std::string::npos);
}

}  // namespace pinbench::export_test
