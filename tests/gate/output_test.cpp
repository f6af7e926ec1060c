// Golden files for every writer of a comparison (table, JSON, Markdown, JUnit), over one
// comparison that holds every verdict, a gate threshold, a noise floor and unpaired cases.
#include <catch2/catch.hpp>

#include <string>

#include "fixtures.hpp"
#include "gate/compare.hpp"
#include "gate/output.hpp"
#include "golden.hpp"

using namespace pinbench;
using namespace pinbench::testing;

namespace {

result::metric m(const std::string& name, const std::string& unit, const std::string& better,
                std::vector<double> samples) {
  return make_metric(name, unit, better, std::move(samples));
}

// A policy counter: the allocator engine declares these deterministic.
result::metric counter(const std::string& name, const std::string& unit, const std::string& better,
                      double value) {
  auto c = make_metric(name, unit, better, {value});
  c.deterministic = true;
  return c;
}

// Base and current differ in every way compare can tell apart.
std::pair<result::run_result, result::run_result> fixture() {
  const nlohmann::json transfer_gate{{"bandwidth", {{"threshold", 0.05}}},
                                     {"host_call_time", {{"threshold", 0.10}}}};
  auto base = make_result(
      {make_scenario(
           "transfer-modes", "transfer",
           {make_case("memory=pinned,mode=non_blocking",
                      {m("bandwidth", "GB/s", "higher", synthetic(12.0, 0.01, 12, 101)),
                       m("copy_time", "ns", "lower", synthetic(2.7e6, 0.01, 12, 102)),
                       m("host_call_time", "ns", "lower", synthetic(5000, 0.01, 12, 103))}),
            make_case("memory=pageable,mode=blocking",
                      {m("bandwidth", "GB/s", "higher", synthetic(5.0, 0.10, 10, 104)),
                       m("copy_time", "ns", "lower", synthetic(6.5e6, 0.01, 10, 105))}),
            make_case("memory=pinned,mode=blocking",
                      {m("bandwidth", "GB/s", "higher", synthetic(11.0, 0.01, 10, 106))})},
           transfer_gate),
       make_scenario(
           "allocator-configs", "allocator",
           {make_case("config=\"\"",
                      {counter("reserved_bytes.all.peak", "bytes", "lower", 2147483648.0),
                       counter("num_device_alloc", "count", "lower", 120),
                       counter("segment.all.peak", "count", "", 10)}),
            make_case("config=max_split_size_mb:128",
                      {m("alloc_latency", "ns", "lower", synthetic(850, 0.02, 8, 107))})})},
      "host", "host emulation (Test CPU)", "", "2026-01-01T00:00:00Z");

  auto current = make_result(
      {make_scenario(
           "transfer-modes", "transfer",
           {make_case("memory=pinned,mode=non_blocking",
                      {m("bandwidth", "GB/s", "higher", synthetic(9.6, 0.01, 12, 201)),
                       m("copy_time", "ns", "lower", synthetic(2.2e6, 0.01, 12, 202)),
                       m("host_call_time", "ns", "lower", synthetic(5300, 0.01, 12, 203))}),
            make_case("memory=pageable,mode=blocking",
                      {m("bandwidth", "GB/s", "higher", synthetic(5.15, 0.10, 10, 204)),
                       m("copy_time", "ns", "lower", synthetic(6.5e6, 0.01, 10, 205))})},
           transfer_gate),
       make_scenario("allocator-configs", "allocator",
                     {make_case("config=\"\"",
                                {counter("reserved_bytes.all.peak", "bytes", "lower", 2818572288.0),
                                 counter("num_device_alloc", "count", "lower", 120),
                                 counter("segment.all.peak", "count", "", 12)}),
                      make_case("config=max_split_size_mb:128", {})}),
       make_scenario("loader-workers", "loader",
                     {make_case("num_workers=4", {m("samples_per_s", "samples/s", "higher",
                                                    synthetic(1520, 0.02, 5, 208))})})},
      "host", "host emulation (Test CPU)", "", "2026-01-02T00:00:00Z");
  auto& failed = current.scenarios[1].cases[1];
  failed.status = result::case_status::error;
  failed.message = "out of memory: tried to allocate 2 GiB <with 1 GiB free>";
  return {base, current};
}

gate::comparison fixture_comparison(gate::fail_on f = gate::fail_on::regression) {
  const auto [base, current] = fixture();
  gate::options o;
  o.fail = f;
  return gate::compare(base, current, o, "base.json", "current.json");
}

}  // namespace

TEST_CASE("the fixture holds every verdict", "[gate][output]") {
  const auto c = fixture_comparison();
  CHECK(c.count(gate::verdict::regression) == 2);
  CHECK(c.count(gate::verdict::improvement) == 1);
  CHECK(c.count(gate::verdict::unchanged) == 3);
  CHECK(c.count(gate::verdict::inconclusive) == 1);
  CHECK(c.count(gate::verdict::failed) == 1);
  CHECK(c.count(gate::verdict::info, false) == 1);
  CHECK(c.only_in_base.size() == 1);
  CHECK(c.only_in_current.size() == 1);
  CHECK(c.exit_code() == 1);
}

TEST_CASE("golden: the comparison table", "[gate][output][golden]") {
  check_golden("compare_table.txt", gate::to_table(fixture_comparison()));
}

TEST_CASE("golden: the comparison as JSON", "[gate][output][golden]") {
  check_golden("compare.json", gate::to_json(fixture_comparison()).dump(2) + "\n");
}

TEST_CASE("golden: the comparison as Markdown", "[gate][output][golden]") {
  check_golden("compare.md", gate::to_markdown(fixture_comparison()));
}

TEST_CASE("golden: the comparison as JUnit XML", "[gate][output][golden]") {
  check_golden("compare_junit.xml", gate::to_junit(fixture_comparison()));
}

TEST_CASE("JUnit: inconclusive rows are skipped, or failures under --fail-on inconclusive",
          "[gate][output]") {
  const auto lenient = gate::to_junit(fixture_comparison());
  CHECK(lenient.find("<skipped message=\"inconclusive: ") != std::string::npos);
  CHECK(lenient.find("type=\"inconclusive\"") == std::string::npos);
  const auto strict = gate::to_junit(fixture_comparison(gate::fail_on::inconclusive));
  CHECK(strict.find("<failure type=\"inconclusive\"") != std::string::npos);
  CHECK(strict.find("<failure type=\"missing\"") != std::string::npos);
  // Markup in messages is escaped.
  CHECK(strict.find("&lt;with 1 GiB free&gt;") != std::string::npos);
  CHECK(strict.find("<with") == std::string::npos);
}

TEST_CASE("the table colours verdicts only when asked", "[gate][output]") {
  const auto c = fixture_comparison();
  CHECK(gate::to_table(c, false).find('\x1b') == std::string::npos);
  const auto colour = gate::to_table(c, true);
  CHECK(colour.find("\x1b[31mregression\x1b[0m") != std::string::npos);
  CHECK(colour.find("\x1b[32mimprovement\x1b[0m") != std::string::npos);
}
