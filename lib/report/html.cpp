// The HTML report: one self-contained page (no script, no network: a Content-Security-Policy
// says so to the browser). What a person looks for comes first: the summary (each scenario's
// verdict, the cases that failed or were skipped), then per scenario its charts (each kind draws
// its own, kinds/<kind>/) and its table, and last the environment, folded. Laid out to read at
// 800 px and wider without scrolling sideways (scripts/check-report.sh checks it in Chromium);
// a scenario's table of cases, a data table, may scroll inside its own box on a narrow window.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chart/figure.hpp"
#include "chart/html.hpp"
#include "chart/svg.hpp"
#include "core/text.hpp"
#include "kinds/registry.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

using chart::svg::escape;
using json = nlohmann::json;

// The report's own rules (chart::html::page_head adds the shared ones).
constexpr std::string_view style_sheet = R"(
.verdict { border-left: 4px solid #0072B2; background: #eef6fc; padding: 6px 10px; }
tbody tr:nth-child(even) { background: #fafafa; }
.status-error { color: #a40000; font-weight: 600; }
.status-interrupted { color: #7a4d00; font-weight: 600; }
.status-skipped { color: #555; font-style: italic; }
.env th { text-align: left; font-weight: 500; background: #f6f6f6; }
footer { margin-top: 30px; color: #444; font-size: 0.9rem; }
.env td { overflow-wrap: anywhere; }
details#environment > summary { font-size: 1.3rem; font-weight: 600; cursor: pointer; }
details.values > summary { cursor: pointer; }
ul.summary li { margin: 4px 0; }
table.cases { font-size: 0.8rem; }
table.cases th, table.cases td { padding: 3px 5px; }
table.cases td.num { white-space: normal; }
table.cases td.num span { white-space: nowrap; }
)";

// The kind's own charts (kinds/<kind>/), their ids unique on the page.
std::vector<chart::figure> scenario_figures(const result::scenario_result& s, std::size_t index) {
  const auto* kind = kinds::find(s.kind);
  if (kind == nullptr || !kind->figures) return {};
  return kind->figures(s, fmt::format("s{}-", index));
}

// ---- page parts -------------------------------------------------------------------------

std::string env_value(const std::string& key, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  const bool sized = key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0;
  if (sized && v.is_number_integer() && v.get<double>() >= 0)
    return chart::bytes_text(v.get<double>()) + " (" + v.dump() + ")";
  if (v.is_number_float()) return exact_number(v.get<double>());
  return v.dump();
}

// A list of more than a few numbers (the timer's samples) would be one unbroken line that
// widens the page: its count, median and range, the values beneath, folded and shown to 4
// significant digits (the result file holds them exactly).
std::string env_cell(const std::string& key, const json& v) {
  constexpr std::size_t shown_in_full = 8;
  bool numbers = v.is_array() && v.size() > shown_in_full;
  if (numbers)
    for (const auto& e : v) numbers = numbers && e.is_number();
  if (!numbers) return escape(env_value(key, v));
  std::vector<double> sorted;
  std::string all;
  for (const auto& e : v) {
    sorted.push_back(e.get<double>());
    all += fmt::format("{}{:.4g}", all.empty() ? "" : ", ", e.get<double>());
  }
  std::sort(sorted.begin(), sorted.end());
  const std::size_t h = sorted.size() / 2;
  const double median = sorted.size() % 2 == 1 ? sorted[h] : (sorted[h - 1] + sorted[h]) / 2;
  return "<details class=\"values\"><summary>" +
         escape(fmt::format("{} values, median {:.4g}, from {:.4g} to {:.4g}", sorted.size(),
                            median, sorted.front(), sorted.back())) +
         "</summary>" + escape(all) + " (4 significant digits; exact in the result file)</details>";
}

void env_rows(const json& j, const std::string& prefix, std::string& out) {
  for (const auto& [k, v] : j.items()) {
    // Warnings are shown as warnings, the backend in its own row; null says nothing.
    if (prefix.empty() && (k == "warnings" || k == "backend")) continue;
    if (v.is_null()) continue;
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object() && !v.empty()) {
      env_rows(v, name, out);
      continue;
    }
    out += "<tr><th scope=\"row\">" + escape(name) + "</th><td>" + env_cell(k, v) + "</td></tr>\n";
  }
}

std::string environment_section(const result::run_result& r) {
  std::string out =
      "<details id=\"environment\">\n<summary id=\"environment-h\">Environment: where and how "
      "the figures were measured</summary>\n";
  out +=
      "<table class=\"env\">\n<caption>Where and how the figures were measured</caption>\n"
      "<tbody>\n";
  const auto row = [&](std::string_view k, const std::string& v) {
    if (!v.empty())
      out += "<tr><th scope=\"row\">" + escape(k) + "</th><td>" + escape(v) + "</td></tr>\n";
  };
  row("pinbench", r.tool_version + (r.tool_git.empty() ? "" : " (" + r.tool_git + ")"));
  row("created", r.created);
  row("backend", r.backend_name());
  if (r.environment.is_object()) env_rows(r.environment, {}, out);
  row("seed", std::to_string(r.seed));
  if (r.overrides.is_object() && !r.overrides.empty()) {
    std::string sets;
    for (const auto& [k, v] : r.overrides.items())
      sets +=
          (sets.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    row("overrides (--set)", sets);
  }
  row("command line", r.command_line);
  out += "</tbody>\n</table>\n</details>\n";
  return out;
}

std::string status_class(result::case_status status) {
  if (status == result::case_status::ok) return "status-ok";
  if (status == result::case_status::error) return "status-error";
  if (status == result::case_status::skipped) return "status-skipped";
  return "status-interrupted";
}

// A header or a case id, escaped, that may break after '.', '_' and ',' (allocated_bytes.all.peak,
// config=max_split_size_mb:21): long names wrap between their parts instead of widening the table.
std::string breakable(const std::string& text) {
  std::string out;
  for (const char ch : escape(text)) {
    out += ch;
    if (ch == '.' || ch == '_' || ch == ',') out += "<wbr>";
  }
  return out;
}

// "1.34 us ±73.8%": the value and its noise each kept whole, the noise free to go to a
// second line, so that a table of many metrics fits the page.
std::string figure_cell(const std::string& text) {
  const std::string noise = " \u00b1";
  const auto at = text.find(noise);
  if (at == std::string::npos) return "<span>" + escape(text) + "</span>";
  return "<span>" + escape(text.substr(0, at)) + "</span> <span>" + escape(text.substr(at + 1)) +
         "</span>";
}

// The cases: a data table, which may scroll inside its own box on a narrow window.
std::string scenario_table(const result::scenario_result& s, const std::string& caption) {
  const auto g = detail::scenario_grid(s, 0);
  std::string out =
      "<div class=\"table-wrap\">\n<table class=\"cases\" data-scroll=\"data\">\n<caption>" +
      escape(caption) + "</caption>\n<thead><tr>";
  for (const auto& c : g.columns) out += "<th scope=\"col\">" + breakable(c.header) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 0; r < g.rows.size(); ++r) {
    const auto& row = g.rows[r];
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i == 0) {
        out += "<th scope=\"row\"><code>" + breakable(row[i]) + "</code></th>";
      } else if (i + 1 == row.size()) {
        out += "<td class=\"" + status_class(g.statuses[r]) + "\">" + escape(row[i]) + "</td>";
      } else {
        out += g.columns[i].alignment == detail::align::right
                   ? "<td class=\"num\">" + figure_cell(row[i]) + "</td>"
                   : "<td>" + escape(row[i]) + "</td>";
      }
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n</div>\n";
}

std::string scenario_section(const result::scenario_result& s, std::size_t index) {
  const std::string id = fmt::format("scenario-{}", index);
  std::string out = fmt::format(
      "<section class=\"scenario\" id=\"{}\" aria-labelledby=\"{}-h\" data-kind=\"{}\">\n"
      "<h2 id=\"{}-h\">{}</h2>\n",
      id, id, escape(s.kind), id, escape(s.name));
  if (!s.description.empty()) out += "<p class=\"lead\">" + escape(s.description) + "</p>\n";
  out += "<p>kind: <code>" + escape(s.kind) + "</code>";
  if (!s.source.empty()) out += " \u00b7 source: <code>" + escape(s.source) + "</code>";
  out += fmt::format(" \u00b7 {} case(s)</p>\n", s.cases.size());
  if (!s.verdict.empty())
    out += "<p class=\"verdict\"><strong>Verdict:</strong> " + escape(s.verdict) + "</p>\n";

  const auto figures = scenario_figures(s, index);
  if (!figures.empty()) {
    out += "<h3>Charts</h3>\n";
    for (const auto& f : figures) out += chart::html::figure_html(f);
  }
  out += "<h3>Cases</h3>\n";
  if (s.cases.empty())
    out += "<p>(no cases)</p>\n";
  else
    out += scenario_table(s, s.name +
                                 ": median of each headline metric (\u00b1 relative "
                                 "standard deviation; a percentage \u00b1 points), samples, "
                                 "stop reason and status");
  if (const auto conditions = detail::scenario_conditions(s); !conditions.empty()) {
    out += "<h3>Conditions</h3>\n<ul class=\"conditions\">\n";
    for (const auto& line : conditions) out += "<li>" + escape(line) + "</li>\n";
    out += "</ul>\n";
  }
  if (const auto checks = detail::replay_checks(s); !checks.empty()) {
    out += "<h3>Against PyTorch's decisions</h3>\n<ul class=\"conditions\">\n";
    for (const auto& line : checks) out += "<li>" + escape(line) + "</li>\n";
    out += "</ul>\n";
  }
  std::string warnings;
  for (const auto& c : s.cases)
    for (const auto& w : c.warnings)
      warnings += "<li><code>" + escape(c.id.empty() ? "default" : c.id) + "</code>: " + escape(w) +
                  "</li>\n";
  if (!warnings.empty())
    out += "<h3>Warnings</h3>\n<ul class=\"warnings\">\n" + warnings + "</ul>\n";
  return out + "</section>\n";
}

// What a person looks for first: each scenario's verdict and its cases that did not complete,
// and the run's warnings.
std::string summary_section(const result::run_result& r) {
  std::string out =
      "<section id=\"summary\" aria-labelledby=\"summary-h\">\n<h2 id=\"summary-h\">Summary"
      "</h2>\n";
  for (const auto& w : detail::environment_warnings(r))
    out += "<p class=\"warning\" role=\"note\">warning: " + escape(w) + "</p>\n";
  if (r.scenarios.empty()) return out + "<p>(no scenarios)</p>\n</section>\n";
  out += "<ul class=\"summary\">\n";
  std::string incomplete;
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
    const auto& s = r.scenarios[i];
    std::size_t failed = 0, skipped = 0, interrupted = 0;
    for (const auto& c : s.cases) {
      if (c.status == result::case_status::ok) continue;
      if (c.status == result::case_status::error)
        ++failed;
      else if (c.status == result::case_status::skipped)
        ++skipped;
      else
        ++interrupted;
      incomplete += fmt::format(
          "<li><a href=\"#scenario-{}\">{}</a> <code>{}</code>: <span class=\"{}\">{}</span>{}"
          "</li>\n",
          i, escape(s.name), breakable(c.id.empty() ? "default" : c.id), status_class(c.status),
          escape(result::to_string(c.status)),
          c.message.empty() ? "" : " \u2014 " + escape(c.message));
    }
    std::string counts = fmt::format("{} case(s)", s.cases.size());
    if (failed > 0) counts += fmt::format(", {} failed", failed);
    if (skipped > 0) counts += fmt::format(", {} skipped", skipped);
    if (interrupted > 0) counts += fmt::format(", {} interrupted", interrupted);
    out += fmt::format(
        "<li><a href=\"#scenario-{}\">{}</a> ({}): {}{}</li>\n", i, escape(s.name), escape(s.kind),
        counts,
        s.verdict.empty() ? std::string(".") : ". <strong>Verdict:</strong> " + escape(s.verdict));
  }
  out += "</ul>\n";
  if (!incomplete.empty())
    out += "<h3>Cases that did not complete</h3>\n<ul class=\"incomplete\">\n" + incomplete +
           "</ul>\n";
  return out + "</section>\n";
}

// A tune result's question answered first: the answer to paste, why, the trials as a chart.
std::string tune_section(const result::tune_block& t) {
  std::string out =
      "<section class=\"tune\" id=\"tune\" aria-labelledby=\"tune-h\">\n<h2 id=\"tune-h\">"
      "The answer (pinbench tune " +
      escape(to_string(t.question)) + ")</h2>\n";
  if (!t.self_check.empty()) out += "<p class=\"self-check\">" + escape(t.self_check) + "</p>\n";
  if (!t.answer.empty()) out += "<pre><code>" + escape(t.answer) + "</code></pre>\n";
  if (!t.verdict.empty())
    out += "<p class=\"verdict\"><strong>Why:</strong> " + escape(t.verdict) + "</p>\n";
  if (t.stopped_by != result::search_stop::none)
    out += "<p class=\"warning\" role=\"note\">The search was cut short (" +
           escape(to_string(t.stopped_by)) +
           "): the answer is the best of the trials completed.</p>\n";
  if (const auto f = chart::tune_chart(t, "tune-trials")) out += chart::html::figure_html(*f);
  return out + "</section>\n";
}

}  // namespace

std::string to_html(const result::run_result& r) {
  // No script and nothing from the network: the browser is told so, and refuses any.
  std::string out = chart::html::page_head(
      r.created.empty() ? std::string("pinbench report")
                        : fmt::format("pinbench report \u2014 {}", r.created),
      r.tool_version, style_sheet);
  out += "<header>\n<h1>pinbench results</h1>\n<p class=\"lead\">" +
         escape(detail::header_line(r)) + "</p>\n";
  if (r.emulated())
    out +=
        "<p class=\"warning\" role=\"note\">Host backend: the device is emulated in host "
        "memory. These are host figures (your RAM and CPUs), not GPU figures.</p>\n";
  if (r.interrupted)
    out +=
        "<p class=\"warning\" role=\"note\">The run was interrupted: the result holds the "
        "cases completed before it stopped.</p>\n";
  out += "</header>\n";
  out += "<main>\n";
  if (r.tune) out += tune_section(*r.tune);
  out += summary_section(r);
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) out += scenario_section(r.scenarios[i], i);
  out += environment_section(r);
  out += "</main>\n<footer>\n<p>" + escape(detail::footer_line(r)) + "</p>\n</footer>\n";
  return out + "</body>\n</html>\n";
}

}  // namespace pinbench::report
