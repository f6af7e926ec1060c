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

TEST_CASE("Markdown: link and image syntax in case ids and messages shows as text",
          "[gate][output]") {
  auto [base, current] = fixture();
  // A case in both (a row), a case in one only, a message, a file label with a backtick.
  for (auto* r : {&base, &current}) r->scenarios[0].cases[0].id = "[click](http://x)";
  base.scenarios[0].cases[2].id = "![x](http://y)";
  current.scenarios[1].cases[1].message = "see [here](http://z) `now`";
  const auto c = gate::compare(base, current, gate::options{}, "b`ase.json", "current.json");
  const std::string md = gate::to_markdown(c);
  // A case id in a table: a code span, which shows its text literally whatever it holds.
  CHECK(md.find("| `[click](http://x)` | bandwidth |") != std::string::npos);
  // In text, escaped: the unpaired case, the file's label.
  CHECK(md.find("- transfer-modes !\\[x\\](http://y)\n") != std::string::npos);
  CHECK(md.find("- **base:** b\\`ase.json") != std::string::npos);
  // In text, escaped.
  CHECK(md.find("see \\[here\\](http://z) \\`now\\`") != std::string::npos);
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

namespace {

std::string html_page() {
  const auto [base, current] = fixture();
  gate::options o;
  return gate::to_html(gate::compare(base, current, o, "base.json", "current.json"), base, current);
}

// The verdict of each row of the page's verdict table, top to bottom.
std::vector<std::string> table_verdicts(const std::string& html) {
  std::vector<std::string> out;
  const std::string open = "<tr class=\"verdict-";
  for (auto at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const auto from = at + open.size();
    out.push_back(html.substr(from, html.find('"', from) - from));
  }
  return out;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("golden: the comparison as an HTML page", "[gate][output][golden][compare][html]") {
  check_golden("compare.html", html_page());
}

TEST_CASE("the HTML page is self-contained and lists regressions first",
          "[gate][output][compare][html]") {
  const auto html = html_page();
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'; img-src data:\">") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<h1>pinbench compare: failed</h1>") != std::string::npos);

  // Every row, failed and regressions first, then inconclusive, improvement, unchanged, info.
  const auto verdicts = table_verdicts(html);
  REQUIRE(verdicts.size() == 9);
  const std::vector<std::string> expected{"failed",       "regression",  "regression",
                                          "inconclusive", "improvement", "unchanged",
                                          "unchanged",    "unchanged",   "info"};
  CHECK(verdicts == expected);
  // Markup from the results is escaped.
  CHECK(html.find("&lt;with 1 GiB free&gt;") != std::string::npos);
  CHECK(html.find("<with") == std::string::npos);
}

TEST_CASE("the HTML page draws each gated metric's samples and interval",
          "[gate][output][compare][html][chart]") {
  const auto html = html_page();
  // Seven gated metrics (the failed case and the info row have no charts): two charts each.
  CHECK(occurrences(html, "<section class=\"metric\"") == 7);
  CHECK(occurrences(html, "<svg class=\"chart strip-chart\"") == 7);
  CHECK(occurrences(html, "<svg class=\"chart interval-chart\"") == 7);
  // Each title above its chart.
  for (auto at = html.find("<figure>"); at != std::string::npos; at = html.find("<figure>", at + 1))
    CHECK(html.find("<figcaption>", at) < html.find("<svg ", at));

  // The first section is the first regression: bandwidth of the pinned non_blocking case,
  // 12 samples a side, its interval wholly below -5%.
  const auto first = html.find("<section class=\"metric\" id=\"row-1\"");
  REQUIRE(first != std::string::npos);
  CHECK(html.find("<section class=\"metric\"") == first);
  const std::string section = html.substr(first, html.find("</section>", first) - first);
  CHECK(section.find("bandwidth") != std::string::npos);
  CHECK(section.find(">baseline (12 samples)<title>") != std::string::npos);
  CHECK(section.find(">candidate (12 samples)<title>") != std::string::npos);
  CHECK(occurrences(section, "class=\"mark sample\"") == 24);
  CHECK(section.find(">bandwidth (GB/s)</text>") != std::string::npos);
  CHECK(occurrences(section, "class=\"mark interval\"") == 1);
  CHECK(section.find(">change of the median (%)</text>") != std::string::npos);
  CHECK(section.find(">threshold \u00b15.0%</text>") != std::string::npos);
  CHECK(section.find(">regression (worse than the threshold)</text>") != std::string::npos);

  // A deterministic counter has a change but no interval, and says why.
  CHECK(html.find("no interval: judged exactly (deterministic)") != std::string::npos);
}
