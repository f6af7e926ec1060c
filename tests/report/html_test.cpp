// The HTML report and its SVG charts: a golden page, and the structure every page must have
// (a section per scenario, accessible charts with units and legends, nothing external, all
// text escaped, charts only where there is data to draw).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "chart/svg.hpp"
#include "gate/fixtures.hpp"
#include "golden.hpp"
#include "report/report.hpp"

using namespace pinbench;
using nlohmann::json;
using pinbench::testing::check_golden;

namespace {

using testing::make_metric;

result::case_result transfer_case(const std::string& memory, const std::string& bytes,
                                  double gbps) {
  result::case_result c;
  c.id = "memory=" + memory + ",bytes=" + bytes;
  c.params = {{"direction", "h2d"}, {"memory", memory}, {"mode", "non_blocking"}, {"bytes", bytes}};
  c.metrics = {make_metric("bandwidth", "GB/s", "higher", {gbps * 0.98, gbps, gbps * 1.01}),
               make_metric("copy_time", "ns", "lower", {1000, 1100, 1050}),
               make_metric("host_call_time", "ns", "lower", {900, 950, 1000})};
  // Over a ceiling of 16 GB/s (the case's link_ceiling), sample by sample.
  constexpr double ceiling_gbps = 16;
  c.metrics.push_back(
      make_metric("link_fraction", "fraction", "",
                  {gbps * 0.98 / ceiling_gbps, gbps / ceiling_gbps, gbps * 1.01 / ceiling_gbps}));
  c.extra = {{"link_ceiling", {{"gbps", ceiling_gbps}, {"source", "a ceiling for the test"}}}};
  return c;
}

result::case_result loader_case(int workers, double samples_per_s, double busy) {
  result::case_result c;
  c.id = "num_workers=" + std::to_string(workers);
  c.params = {{"dataset", {{"samples", 1024}, {"sample_bytes", "64KiB"}}},
              {"num_workers", workers},
              {"pin_memory", true}};
  c.metrics = {make_metric("samples_per_s", "samples/s", "higher",
                           {samples_per_s * 0.97, samples_per_s, samples_per_s * 1.02}),
               make_metric("gpu_busy", "fraction", "higher", {busy, busy, busy})};
  c.stopped = result::stop_reason::max_samples;
  return c;
}

// An allocator case as the engine writes it: counters, a timeline and a segment map.
result::case_result allocator_case(const std::string& config, double ooms) {
  result::case_result c;
  c.id = "config=" + config;
  c.params = {{"config", config}, {"workload", "training_loop"}};
  const double mib = 1024.0 * 1024;
  c.metrics = {make_metric("alloc_latency", "ns", "lower", {120, 130}),
               make_metric("allocated_bytes.all.peak", "bytes", "", {60 * mib}),
               make_metric("reserved_bytes.all.peak", "bytes", "lower", {80 * mib}),
               make_metric("fragmentation", "fraction", "lower", {0.25}),
               make_metric("num_ooms", "count", "lower", {ooms})};
  json points = json::array();
  for (int i = 0; i < 40; ++i) {
    const double phase = i % 10;
    points.push_back({i * 2, static_cast<std::int64_t>(phase * 6 * mib),
                      static_cast<std::int64_t>(std::min(8.0, phase + 2) * 10 * mib)});
  }
  c.extra["timeline"] = {{"columns", {"call", "allocated_bytes", "reserved_bytes"}},
                         {"calls", 80},
                         {"calls_per_point", 2},
                         {"points", points},
                         {"iterations", {20, 40, 60}}};
  const auto m = [&](double v) { return static_cast<std::int64_t>(v * mib); };
  c.extra["segments_at_peak"] = {
      {"reserved_bytes", m(80)},
      {"allocated_bytes", m(60)},
      {"segments_total", 3},
      {"segments",
       {{{"offset", 0},
         {"size", m(20)},
         {"allocated_bytes", m(12)},
         {"pool", "large"},
         {"stream", 0},
         {"blocks",
          {{{"offset", 0}, {"size", m(12)}, {"state", "active_allocated"}},
           {{"offset", m(12)}, {"size", m(8)}, {"state", "inactive"}}}}},
        {{"offset", m(20)},
         {"size", m(58)},
         {"allocated_bytes", m(48)},
         {"pool", "large"},
         {"stream", 0},
         {"blocks",
          {{{"offset", 0}, {"size", m(48)}, {"state", "active_allocated"}},
           {{"offset", m(48)}, {"size", m(10)}, {"state", "inactive"}}}}},
        {{"offset", m(78)},
         {"size", m(2)},
         {"allocated_bytes", 0},
         {"pool", "small"},
         {"stream", 0},
         {"blocks", {{{"offset", 0}, {"size", m(2)}, {"state", "inactive"}}}}}}}};
  c.stopped = result::stop_reason::max_samples;
  return c;
}

// Five scenarios: a transfer size sweep (line chart), a transfer scenario at one size (bars),
// a loader worker sweep, an allocator scenario, and a kind the report does not chart, with text
// that must be escaped.
result::run_result fixture() {
  result::run_result r;
  r.tool_version = "0.1.0";
  r.tool_git = "abc1234";
  r.created = "2026-11-30T20:00:00Z";
  r.backend = "host";
  r.environment = {{"backend", "host"},
                   {"device", {{"name", "host-emulated device"}, {"emulated", true}}},
                   {"host",
                    {{"cpu", "Test CPU"},
                     {"cores", 2},
                     {"memlock_limit_bytes", 8388608},
                     {"hostname", "testhost"}}},
                   {"warnings", {"mlock failed: pinned memory is not page-locked"}}};
  r.seed = 7;
  r.command_line = "pinbench run builtin:transfer-size --out r.json";

  result::scenario_result size;
  size.name = "transfer-size";
  size.description = "pinned vs pageable by size";
  size.kind = "transfer";
  size.source = "builtin:transfer-size";
  size.cases = {transfer_case("pageable", "4KiB", 1.5), transfer_case("pageable", "1MiB", 6),
                transfer_case("pageable", "64MiB", 8),  transfer_case("pinned", "4KiB", 2),
                transfer_case("pinned", "1MiB", 11),    transfer_case("pinned", "64MiB", 12.5)};

  result::scenario_result modes;
  modes.name = "transfer-modes";
  modes.kind = "transfer";
  modes.cases = {transfer_case("pageable", "32MiB", 7), transfer_case("pinned", "32MiB", 12)};
  result::case_result failed = transfer_case("registered", "32MiB", 0);
  failed.status = result::case_status::error;
  failed.message = "cudaHostRegister failed";
  failed.metrics.clear();
  modes.cases.push_back(failed);

  result::scenario_result loader;
  loader.name = "loader-workers";
  loader.kind = "loader";
  loader.verdict = "data-bound at num_workers=0";
  loader.cases = {loader_case(0, 900, 0.31), loader_case(2, 2400, 0.8), loader_case(4, 3100, 0.97)};

  result::scenario_result alloc;
  alloc.name = "allocator-fragmentation";
  alloc.kind = "allocator";
  alloc.cases = {allocator_case("", 2), allocator_case("expandable_segments:True", 0)};

  result::scenario_result odd;
  odd.name = "widgets <&>";
  odd.description = "<script>alert('x')</script> & \"quotes\"";
  odd.kind = "custom";
  result::case_result w;
  w.id = "label=<b>";
  w.params = {{"label", "<b>"}};
  w.metrics = {make_metric("widgets", "count", "higher", {3})};
  w.stopped = result::stop_reason::single;
  odd.cases = {w};

  r.scenarios = {size, modes, loader, alloc, odd};
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each <svg ...>...</svg> of the page.
std::vector<std::string> svgs_of(const std::string& html) {
  std::vector<std::string> out;
  for (auto at = html.find("<svg "); at != std::string::npos; at = html.find("<svg ", at + 1)) {
    const auto end = html.find("</svg>", at);
    REQUIRE(end != std::string::npos);
    out.push_back(html.substr(at, end + 6 - at));
  }
  return out;
}

// The text of one scenario's <section>.
std::string section(const std::string& html, std::size_t index) {
  const auto at = html.find("<section class=\"scenario\" id=\"scenario-" + std::to_string(index));
  REQUIRE(at != std::string::npos);
  return html.substr(at, html.find("</section>", at) - at);
}

}  // namespace

TEST_CASE("the HTML report matches its golden file", "[report][html]") {
  check_golden("report.html", report::to_html(fixture()));
}

TEST_CASE("the HTML table shows a transfer's link_fraction as \"% of link\"", "[report][html]") {
  const auto size = section(report::to_html(fixture()), 0);
  CHECK(size.find("<th scope=\"col\">% of link</th>") != std::string::npos);
  // pinned 1 MiB: a median of 11 GB/s over the 16 GB/s ceiling.
  CHECK(size.find("<td class=\"num\"><span>68.8</span> <span>±") != std::string::npos);
}

TEST_CASE("the HTML report is one self-contained page", "[report][html]") {
  const auto html = report::to_html(fixture());
  CHECK(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0) == 0);
  CHECK(html.find("<meta charset=\"utf-8\">") != std::string::npos);
  // Nothing from the network and no script, and the browser is told to refuse any.
  CHECK(html.find("Content-Security-Policy\" content=\"default-src 'none'") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("url(http") == std::string::npos);
  CHECK(std::regex_search(html, std::regex(R"(href="(?!#|data:))")) == false);
  CHECK(html.substr(html.size() - 8) == "</html>\n");
}

TEST_CASE("the HTML report has the summary first, one section per scenario, the environment last",
          "[report][html]") {
  const auto run = fixture();
  const auto html = report::to_html(run);
  CHECK(count(html, "<section class=\"scenario\"") == run.scenarios.size());
  // What a person looks for comes first; the environment is folded at the end.
  const auto summary = html.find("<section id=\"summary\"");
  const auto environment = html.find("<details id=\"environment\">");
  REQUIRE(summary != std::string::npos);
  REQUIRE(environment != std::string::npos);
  CHECK(summary < html.find("<section class=\"scenario\""));
  CHECK(environment > html.rfind("<section class=\"scenario\""));
  // The summary names each scenario's verdict and the case that failed, with its message.
  const auto summary_part = html.substr(summary, html.find("</section>", summary) - summary);
  CHECK(summary_part.find("<strong>Verdict:</strong> data-bound") != std::string::npos);
  CHECK(summary_part.find("1 failed") != std::string::npos);
  CHECK(summary_part.find("cudaHostRegister failed") != std::string::npos);
  CHECK(html.find("<th scope=\"row\">host.cpu</th><td>Test CPU</td>") != std::string::npos);
  CHECK(html.find("<th scope=\"row\">host.memlock_limit_bytes</th><td>8 MiB (8388608)</td>") !=
        std::string::npos);
  CHECK(html.find("warning: mlock failed") != std::string::npos);
  CHECK(html.find("not GPU figures") != std::string::npos);
  for (std::size_t i = 0; i < run.scenarios.size(); ++i)
    CHECK(html.find("<a href=\"#scenario-" + std::to_string(i) + "\">") != std::string::npos);
  // Tables: a header row, one row per case, the failed case with its message.
  const auto modes = section(html, 1);
  CHECK(count(modes, "<th scope=\"row\">") == 3);
  CHECK(modes.find("<td class=\"status-error\">error: cudaHostRegister failed</td>") !=
        std::string::npos);
  CHECK(section(html, 2).find("<p class=\"verdict\"><strong>Verdict:</strong> data-bound") !=
        std::string::npos);
}

TEST_CASE("every chart is accessible and reads without colour", "[report][html]") {
  const auto html = report::to_html(fixture());
  const auto svgs = svgs_of(html);
  // Transfer size: bandwidth and host_call_time; modes: the same two as bars; loader: two;
  // allocator: out-of-memory errors, peaks, then a timeline and a segment map per case.
  REQUIRE(svgs.size() == 2 + 2 + 2 + 2 + 2 * 2);
  std::set<std::string> ids;
  for (const auto& s : svgs) {
    INFO(s.substr(0, 200));
    const auto at = s.find(" id=\"");
    REQUIRE(at != std::string::npos);
    const std::string id = s.substr(at + 5, s.find('"', at + 5) - at - 5);
    CHECK(ids.insert(id).second);  // ids are unique in the page
    CHECK(s.find("role=\"img\"") != std::string::npos);
    CHECK(s.find("aria-labelledby=\"" + id + "-title " + id + "-desc\"") != std::string::npos);
    CHECK(s.find("<title id=\"" + id + "-title\">") != std::string::npos);
    CHECK(s.find("<desc id=\"" + id + "-desc\">") != std::string::npos);
    CHECK(s.find("class=\"axis-label\"") != std::string::npos);
    CHECK(s.find("class=\"legend\"") != std::string::npos);
    CHECK(s.find("class=\"mark ") != std::string::npos);  // something is drawn
    CHECK(s.find("viewBox=\"0 0 ") != std::string::npos);
  }
  // Units on the axes.
  CHECK(html.find(">bandwidth (GB/s)</text>") != std::string::npos);
  CHECK(html.find(">bytes (bytes, log scale)</text>") != std::string::npos);
  CHECK(html.find(">num_workers</text>") != std::string::npos);
  CHECK(html.find(">samples_per_s (samples/s)</text>") != std::string::npos);
  CHECK(html.find(">gpu_busy (%)</text>") != std::string::npos);
  CHECK(html.find(">allocator calls (count)</text>") != std::string::npos);
  CHECK(html.find(">memory (MiB)</text>") != std::string::npos);
  CHECK(html.find(">bytes along a row (MiB)</text>") != std::string::npos);

  // Bandwidth by size: two lines (pageable, pinned) with different dashes and marker shapes.
  const auto& bandwidth = svgs[0];
  CHECK(bandwidth.find("class=\"chart line-chart\"") != std::string::npos);
  CHECK(count(bandwidth, "class=\"mark line\"") == 2);
  CHECK(count(bandwidth, "class=\"mark marker\"") == 6);
  CHECK(bandwidth.find("data-series=\"memory=pageable\"") != std::string::npos);
  CHECK(bandwidth.find("data-series=\"memory=pinned\"") != std::string::npos);
  const std::regex dashes(R"re(class="mark line"[^>]*stroke-dasharray="[^"]+")re");
  CHECK(std::regex_search(bandwidth, dashes));  // the second line is dashed, the first solid
  CHECK(bandwidth.find(">4 KiB</text>") != std::string::npos);  // log ticks in sizes
  CHECK(bandwidth.find(">64 MiB</text>") != std::string::npos);
  CHECK(count(bandwidth, "class=\"legend-entry\"") == 2);

  // One size only: one bar per completed case (the failed case has none).
  const auto modes = section(html, 1);
  CHECK(count(modes, "class=\"mark bar\"") == 2 * 2);
  CHECK(modes.find("class=\"chart bar-chart\"") != std::string::npos);

  // Segment map: one outline per segment, blocks in patterns, a legend of states used.
  const auto alloc = section(html, 3);
  CHECK(count(alloc, "class=\"chart segment-map\"") == 2);
  CHECK(count(alloc, "class=\"mark block\"") == 2 * 5);
  CHECK(alloc.find(">allocated (active)</text>") != std::string::npos);
  CHECK(alloc.find(">cached (inactive, free)</text>") != std::string::npos);
  CHECK(alloc.find(">pending free</text>") == std::string::npos);  // not in these maps
  CHECK(alloc.find("<pattern id=\"s3-c0-segments-fill1\"") != std::string::npos);
  CHECK(alloc.find(">iteration boundary</text>") != std::string::npos);
  CHECK(alloc.find(">peak reserved</text>") != std::string::npos);
}

TEST_CASE("charts appear only where the result has data for them", "[report][html]") {
  auto run = fixture();
  const auto html = report::to_html(run);
  // A kind the report does not chart gets its table only.
  CHECK(section(html, 4).find("<svg") == std::string::npos);
  CHECK(section(html, 4).find("<table class=\"cases\" data-scroll=\"data\">") != std::string::npos);

  // Allocator cases without timeline or segment map (older results) keep the counts and peaks.
  for (auto& c : run.scenarios[3].cases) c.extra = json::object();
  const auto again = report::to_html(run);
  CHECK(count(section(again, 3), "<svg ") == 2);

  // A transfer scenario with no completed case: no chart.
  run.scenarios[1].cases.erase(run.scenarios[1].cases.begin(), run.scenarios[1].cases.begin() + 2);
  const auto none = report::to_html(run);
  CHECK(section(none, 1).find("<svg") == std::string::npos);
  CHECK(section(none, 1).find("<h3>Charts</h3>") == std::string::npos);

  // No scenarios at all: still a valid page.
  run.scenarios.clear();
  const auto empty = report::to_html(run);
  CHECK(empty.find("<svg") == std::string::npos);
  CHECK(empty.find("</html>") != std::string::npos);
}

TEST_CASE("every chart's title and description stand above it", "[report][html][chart]") {
  const auto html = report::to_html(fixture());
  std::size_t figures = 0;
  for (auto at = html.find("<figure>"); at != std::string::npos;
       at = html.find("<figure>", at + 1)) {
    ++figures;
    const auto end = html.find("</figure>", at);
    const std::string figure = html.substr(at, end - at);
    INFO(figure.substr(0, 300));
    const auto caption = figure.find("<figcaption><strong>");
    const auto svg = figure.find("<svg ");
    REQUIRE(caption != std::string::npos);
    REQUIRE(svg != std::string::npos);
    CHECK(caption < svg);
    CHECK(figure.find("</figcaption>") < svg);
  }
  CHECK(figures == svgs_of(html).size());
  CHECK(html.find("</svg><figcaption>") == std::string::npos);
  CHECK(html.find("</svg>\n<figcaption>") == std::string::npos);
}

TEST_CASE("the allocator report shows out-of-memory errors per case", "[report][html][chart]") {
  const auto alloc = section(report::to_html(fixture()), 3);
  const auto at = alloc.find("<svg class=\"chart bar-chart\" id=\"s3-ooms\"");
  REQUIRE(at != std::string::npos);
  const std::string chart = alloc.substr(at, alloc.find("</svg>", at) - at);
  CHECK(chart.find(">num_ooms (count)</text>") != std::string::npos);
  CHECK(count(chart, "class=\"mark bar\"") == 2);  // a zero still shows as a sliver
  // Case labels and the counts at the bars' ends.
  CHECK(chart.find("<title>config=</title></text>") != std::string::npos);
  CHECK(chart.find("<title>config=expandable_segments:True</title></text>") != std::string::npos);
  CHECK(chart.find("config= \u2014 out-of-memory errors: 2 count") != std::string::npos);
  CHECK(chart.find("config=expandable_segments:True \u2014 out-of-memory errors: 0 count") !=
        std::string::npos);
  CHECK(chart.find(">2</text>") != std::string::npos);
  CHECK(chart.find(">0</text>") != std::string::npos);
  // Whole-number ticks, and the answer in words: which config avoided the OOM.
  CHECK(chart.find(">0.5</text>") == std::string::npos);
  CHECK(alloc.find("Out-of-memory errors per case</strong>") != std::string::npos);
  CHECK(alloc.find("Without an out-of-memory error: config=expandable_segments:True.") !=
        std::string::npos);
  // Before the peaks: the question the scenario asks comes first.
  CHECK(at < alloc.find("id=\"s3-peaks\""));
}

TEST_CASE("a scenario with one case gets the distribution of its samples",
          "[report][html][chart]") {
  auto run = fixture();
  run.scenarios[1].cases.erase(run.scenarios[1].cases.begin());  // pinned and a failed case
  const auto modes = section(report::to_html(run), 1);
  CHECK(modes.find("<h3>Charts</h3>") != std::string::npos);
  const auto svgs = svgs_of(modes);
  REQUIRE(svgs.size() == 2);  // bandwidth and host_call_time
  const auto& bandwidth = svgs[0];
  CHECK(bandwidth.find("class=\"chart strip-chart\"") != std::string::npos);
  CHECK(count(bandwidth, "class=\"mark sample\"") == 3);  // one dot per sample
  CHECK(count(bandwidth, "class=\"mark median\"") == 1);
  CHECK(bandwidth.find(">bandwidth (GB/s)</text>") != std::string::npos);
  CHECK(bandwidth.find("<title>memory=pinned,bytes=32MiB</title></text>") != std::string::npos);
  CHECK(bandwidth.find("class=\"legend-entry\"") != std::string::npos);
  CHECK(modes.find("bandwidth: distribution of 3 sample(s)</strong>") != std::string::npos);
  CHECK(svgs[1].find(">host_call_time (us)</text>") != std::string::npos);

  // A one-case allocator scenario: its latency samples besides the counts and peaks.
  run.scenarios[3].cases.pop_back();
  const auto alloc = section(report::to_html(run), 3);
  CHECK(alloc.find("id=\"s3-alloc-latency\"") != std::string::npos);
  CHECK(alloc.find(">alloc_latency (ns)</text>") != std::string::npos);
}

TEST_CASE("all text from the result is escaped", "[report][html]") {
  const auto html = report::to_html(fixture());
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;") !=
        std::string::npos);
  CHECK(html.find("<h2 id=\"scenario-4-h\">widgets &lt;&amp;&gt;</h2>") != std::string::npos);
  CHECK(html.find("<code>label=&lt;b&gt;</code>") != std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
}

TEST_CASE("the SVG layer escapes, formats ticks and survives empty data", "[report][svg]") {
  // A coordinate or label that is not a number ("nan", "-inf") anywhere in the markup.
  const std::regex not_a_number(R"re([\s"'>MLHVhv,-](nan|inf)\b)re", std::regex::icase);
  CHECK(chart::svg::escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(chart::svg::short_number(0) == "0");
  CHECK(chart::svg::short_number(2.5) == "2.5");
  CHECK(chart::svg::short_number(250) == "250");
  CHECK(chart::svg::short_number(2500) == "2500");
  CHECK(chart::svg::short_number(12500) == "12.5k");
  CHECK(chart::svg::short_number(3e6) == "3M");
  CHECK(chart::svg::short_number(0.125) == "0.125");

  chart::svg::line_chart empty;
  empty.id = "e";
  empty.title = "nothing";
  empty.x.label = "x (s)";
  empty.y.label = "y (GB/s)";
  const auto text = chart::svg::render(empty);
  CHECK(text.find("<title id=\"e-title\">nothing</title>") != std::string::npos);
  CHECK(text.find("class=\"mark") == std::string::npos);
  CHECK_FALSE(std::regex_search(text, not_a_number));

  // One point alone on a dense chart still shows (as a marker); NaN points are left out.
  chart::svg::line_chart one = empty;
  one.markers = false;
  one.lines = {{"a", {{1, 2}, {2, std::nan("")}}}};
  const auto single = chart::svg::render(one);
  CHECK(count(single, "class=\"mark marker\"") == 1);
  CHECK_FALSE(std::regex_search(single, not_a_number));

  // A log axis over 4 KiB .. 256 MiB: power-of-two ticks, at most nine of them.
  chart::svg::line_chart sizes = empty;
  sizes.x.log = true;
  sizes.x.format = [](double v) { return chart::svg::short_number(v); };
  sizes.lines = {{"a", {{4096, 1}, {268435456, 2}}}};
  const auto log_text = chart::svg::render(sizes);
  const auto x_axis = log_text.substr(log_text.find("class=\"axis x-axis\""));
  const auto ticks = count(x_axis.substr(0, x_axis.find("</g>")), "text-anchor=\"middle\">");
  CHECK(ticks >= 4);
  CHECK(ticks <= 9 + 1);  // the ticks and the axis label
}

TEST_CASE("a long list in the environment is summarised, its values folded beneath",
          "[report][html]") {
  auto run = fixture();
  json samples = json::array();
  for (int i = 0; i < 31; ++i) samples.push_back(26.473526473526473 + i);
  run.environment["timer"]["read_samples_ns"] = samples;
  const auto html = report::to_html(run);
  CHECK(html.find("<th scope=\"row\">timer.read_samples_ns</th><td><details class=\"values\">"
                  "<summary>31 values, median 41.47, from 26.47 to 56.47</summary>26.47, 27.47") !=
        std::string::npos);
  // Not one unbroken line of full-precision numbers.
  CHECK(html.find("26.473526473526473") == std::string::npos);
}
