// The comparison as one self-contained HTML page (no script, no network: the same
// Content-Security-Policy as the report): the outcome, then the regressions and failed cases as
// cards (the verdict, the figures, the reason on its own line: readable without scrolling
// sideways at any width), the other verdicts folded by kind, every verdict as one data table
// (folded), and for each gated metric its two sample distributions and its interval against the
// threshold.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "chart/figure.hpp"
#include "chart/html.hpp"
#include "chart/svg.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "gate/output.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using chart::svg::escape;
namespace svg = chart::svg;

// The comparison page's own rules (chart::html::page_head adds the shared ones).
constexpr std::string_view style_sheet = R"(
.outcome { border-left: 4px solid #0072B2; background: #eef6fc; padding: 6px 10px; }
.outcome.failed { border-left-color: #a40000; background: #fdeeee; }
.verdict-regression, .verdict-failed { color: #a40000; font-weight: 600; }
.verdict-inconclusive { color: #7a4d00; }
.verdict-improvement { color: #006b4f; }
.verdict-info { color: #555; font-style: italic; }
.sides td { overflow-wrap: anywhere; }
.card { border: 1px solid #d0d0d0; border-left: 5px solid #888; padding: 6px 12px;
        margin: 8px 0; }
.card.verdict-regression, .card.verdict-failed { border-left-color: #a40000; color: inherit;
        font-weight: normal; }
.card.verdict-inconclusive { border-left-color: #b07a00; color: inherit; }
.card.verdict-improvement { border-left-color: #009e73; color: inherit; }
.card.verdict-unchanged { border-left-color: #0072B2; }
.card.verdict-info { border-left-color: #999; color: inherit; font-style: normal; }
.card h3 { font-size: 1rem; margin: 0 0 4px; overflow-wrap: anywhere; }
.card .badge { text-transform: uppercase; font-size: 0.8rem; letter-spacing: 0.04em; }
.card .where { color: #555; font-weight: normal; }
.figures { margin: 2px 0; }
.figures span { display: inline-block; margin-right: 16px; }
.figures .label { color: #555; margin-right: 4px; }
.card p { margin: 3px 0; }
details.group { margin: 10px 0; }
table.verdicts { font-size: 0.8rem; }
table.verdicts th, table.verdicts td { padding: 3px 5px; }
details.group > summary { font-weight: 600; cursor: pointer; }
)";

// Regressions and failed cases first, then what is undecided, then the rest.
int attention_rank(const row& r) {
  switch (r.result) {
    case verdict::failed:
      return 0;
    case verdict::regression:
      return 1;
    case verdict::inconclusive:
      return 2;
    case verdict::improvement:
      return 3;
    case verdict::unchanged:
      return 4;
    case verdict::info:
      break;
  }
  return 5;
}

std::vector<const row*> in_attention_order(const comparison& c) {
  std::vector<const row*> out;
  for (const auto& r : c.rows) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const row* a, const row* b) {
    return attention_rank(*a) < attention_rank(*b);
  });
  return out;
}

// Gated metrics get a section with charts; case-level and info rows are in the table only.
bool charted(const row& r) {
  return r.gated && !r.metric.empty();
}

std::string verdict_class(const row& r) {
  return fmt::format("verdict-{}", to_string(r.result));
}

std::string row_anchor(std::size_t index) {
  return fmt::format("row-{}", index);
}

std::string title_text(const comparison& c) {
  if (c.settings.fail == fail_on::never) return "report only";
  return c.exit_code() == 0 ? "passed" : "failed";
}

std::string header(const comparison& c) {
  std::string out = fmt::format("<header>\n<h1>pinbench compare: {}</h1>\n", title_text(c));
  out += fmt::format("<p class=\"outcome{}\"><strong>{}</strong></p>\n",
                     c.exit_code() == 0 ? "" : " failed", escape(c.outcome_line()));
  out += fmt::format("<p class=\"lead\">{}</p>\n", escape(c.summary_line()));
  out +=
      "<table class=\"sides\">\n<caption>What was compared</caption>\n<thead><tr>"
      "<th scope=\"col\">side</th><th scope=\"col\">file</th><th scope=\"col\">backend</th>"
      "<th scope=\"col\">device</th><th scope=\"col\">created</th></tr></thead>\n<tbody>\n";
  for (const auto* e : {&c.base, &c.current})
    out += fmt::format(
        "<tr><th scope=\"row\">{}</th><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>"
        "</tr>\n",
        e == &c.base ? "baseline" : "candidate", escape(e->label), escape(e->backend),
        escape(e->device), escape(e->created));
  out += "</tbody>\n</table>\n";
  out += fmt::format("<p>Rule: {}. Statistics: {}.</p>\n", escape(detail::rule_text(c.settings)),
                     escape(detail::method_text(c.settings)));
  for (const auto& w : c.warnings)
    out += fmt::format("<p class=\"warning\" role=\"note\">warning: {}</p>\n", escape(w));
  for (const auto& n : c.tune_notes)
    out += fmt::format("<p class=\"verdict\">tune: {}</p>\n", escape(n));
  for (const auto& n : c.replay_notes)
    out += fmt::format("<p class=\"verdict\">against PyTorch: {}</p>\n", escape(n));
  return out + "</header>\n";
}

// A case id or a metric name, escaped, that may break after its commas and underscores (and
// nowhere else): a long one wraps between its parts instead of widening its column or breaking
// mid-word.
std::string breakable_id(const std::string& id) {
  std::string out;
  for (const char ch : escape(id)) {
    out += ch;
    if (ch == ',' || ch == '_') out += "<wbr>";
  }
  return out;
}

std::string verdict_row(const row& r, std::size_t index) {
  const auto cells = detail::row_cells(r);
  std::string out =
      fmt::format("<tr class=\"{}\"><td>{}</td>", verdict_class(r), escape(r.scenario));
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string cell = i == 0   ? "<code>" + breakable_id(cells[i]) + "</code>"
                       : i == 1 ? breakable_id(cells[i])
                                : escape(cells[i]);
    if (i == 1 && charted(r)) cell = fmt::format("<a href=\"#{}\">{}</a>", row_anchor(index), cell);
    const bool numeric = i >= 2 && i + 1 < cells.size();
    const bool last = i + 1 == cells.size();
    out += fmt::format("<td{}>{}</td>",
                       last ? fmt::format(" class=\"{}\"", verdict_class(r))
                            : std::string(numeric ? " class=\"num\"" : ""),
                       cell);
  }
  return out + "</tr>\n";
}

// Every verdict in one data table, for reading across and copying: folded, without the reasons
// (the cards above have them), and scrolling in its own box on a narrow window
// (data-scroll="data").
std::string verdict_table(const comparison& c, const std::vector<const row*>& rows) {
  if (rows.empty()) return {};
  std::string out = fmt::format(
      "<details class=\"group\" id=\"verdict-table\">\n<summary>Every verdict as one table "
      "({} rows)</summary>\n<div class=\"table-wrap\">\n<table class=\"verdicts\" "
      "data-scroll=\"data\">\n<caption>Every compared metric, regressions and failed cases "
      "first (the reasons are in the cards above)</caption>\n<thead><tr><th scope=\"col\">"
      "scenario</th>",
      rows.size());
  for (const auto& h : detail::row_headers(c.settings))
    out += fmt::format("<th scope=\"col\">{}</th>", escape(h));
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < rows.size(); ++i) out += verdict_row(*rows[i], i);
  return out + "</tbody>\n</table>\n</div>\n</details>\n";
}

// One verdict as a card: what was compared and the verdict, the figures, then the reason on a
// line of its own (in a table column it was squeezed to a word a line).
std::string verdict_card(const comparison& c, const row& r, std::size_t index) {
  const auto cells = detail::row_cells(r);
  const auto headers = detail::row_headers(c.settings);
  std::string out = fmt::format(
      "<article class=\"card {}\" id=\"verdict-{}\">\n<h3><span class=\"badge {}\">{}</span> "
      "<code>{}</code> {} <span class=\"where\">({})</span></h3>\n",
      verdict_class(r), index, verdict_class(r), escape(to_string(r.result)),
      breakable_id(cells[0]), breakable_id(cells[1]), escape(r.scenario));
  // base, current, change, interval, p, threshold: those that say something.
  std::string figures;
  for (std::size_t i = 2; i + 1 < cells.size() && i < headers.size(); ++i)
    if (cells[i] != "-")
      figures += fmt::format("<span><span class=\"label\">{}</span>{}</span>", escape(headers[i]),
                             escape(cells[i]));
  if (!figures.empty()) out += "<p class=\"figures\">" + figures + "</p>\n";
  if (!r.reason.empty()) out += "<p class=\"reason\">" + escape(one_line(r.reason)) + "</p>\n";
  if (charted(r))
    out += fmt::format("<p><a href=\"#{}\">samples and interval</a></p>\n", row_anchor(index));
  return out + "</article>\n";
}

// The regressions and failed cases first, open; then each other kind of verdict folded.
std::string verdict_cards(const comparison& c, const std::vector<const row*>& rows) {
  std::string out =
      "<section id=\"attention\" aria-labelledby=\"attention-h\">\n<h2 id=\"attention-h\">"
      "Regressions and failed cases</h2>\n";
  std::size_t shown = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (attention_rank(*rows[i]) <= 1) {
      out += verdict_card(c, *rows[i], i);
      ++shown;
    }
  if (rows.empty())
    out += "<p>(nothing was compared)</p>\n";
  else if (shown == 0)
    out += "<p>None: no gated metric regressed and no case failed.</p>\n";
  out += "</section>\n";
  const struct {
    verdict kind;
    const char* title;
  } groups[] = {{verdict::improvement, "Improvements"},
                {verdict::inconclusive, "Inconclusive"},
                {verdict::unchanged, "Unchanged"},
                {verdict::info, "Not gated (for information)"}};
  for (const auto& g : groups) {
    std::string cards;
    std::size_t n = 0;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i]->result == g.kind) {
        cards += verdict_card(c, *rows[i], i);
        ++n;
      }
    if (n > 0)
      out += fmt::format(
          "<details class=\"group\" id=\"verdicts-{}\">\n<summary>{} ({})</summary>\n{}"
          "</details>\n",
          to_string(g.kind), g.title, n, cards);
  }
  return out;
}

std::string unpaired_list(const comparison& c) {
  if (c.only_in_base.empty() && c.only_in_current.empty()) return {};
  std::string out = "<section id=\"unpaired\"><h2>On one side only</h2>\n<ul>\n";
  const auto list = [&](const std::vector<unpaired>& items, std::string_view where) {
    for (const auto& u : items)
      out += fmt::format("<li>only in {}: {}{}</li>\n", where,
                         escape(detail::subject_text(u.scenario, u.case_id, u.metric)),
                         u.gated ? "" : " (not gated)");
  };
  list(c.only_in_base, "the baseline");
  list(c.only_in_current, "the candidate");
  return out + "</ul>\n</section>\n";
}

// ---- the charts of one metric -------------------------------------------------------------

const result::metric* find_metric(const result::run_result& r, const row& w) {
  for (const auto& s : r.scenarios) {
    if (s.name != w.scenario) continue;
    for (const auto& c : s.cases)
      if (c.id == w.case_id) return c.find(w.metric);
  }
  return nullptr;
}

std::vector<double> finite_samples(const result::metric* m) {
  std::vector<double> out;
  if (m == nullptr) return out;
  for (double v : m->samples)
    if (std::isfinite(v)) out.push_back(v);
  return out;
}

std::string better_text(const row& r) {
  return r.better == result::direction::higher ? "higher is better" : "lower is better";
}

chart::figure distributions(const row& r, const std::string& id, const result::metric* base,
                            const result::metric* current) {
  auto b = finite_samples(base), c = finite_samples(current);
  double biggest = 0;
  for (const auto* side : {&b, &c})
    for (double v : *side) biggest = std::max(biggest, std::fabs(v));
  const auto u = chart::unit_for(r.unit, biggest);
  for (auto* side : {&b, &c})
    for (double& v : *side) v /= u.divisor;
  svg::strip_chart chart;
  chart.id = id;
  chart.value.label = chart::axis_label(r.metric, u);
  chart.value.unit = u.name;
  chart.value.from_zero = false;
  chart.groups = {{fmt::format("baseline ({} samples)", b.size()), std::move(b)},
                  {fmt::format("candidate ({} samples)", c.size()), std::move(c)}};
  chart::figure fig;
  fig.title = fmt::format("{}: baseline and candidate samples", r.metric);
  chart.title = fmt::format("{} \u2014 {} {}", fig.title, r.scenario, r.case_id);
  chart.description = fmt::format(
      "Strip plot of {} ({}), {}: the baseline's samples (median {}) above the candidate's "
      "(median {}), each over a box from the first to the third quartile.",
      r.metric, u.name.empty() ? r.unit : u.name, better_text(r),
      format_value(r.base.median, r.unit, unit_place::in_cell),
      format_value(r.current.median, r.unit, unit_place::in_cell));
  fig.caption = fmt::format(
      " Each dot is a sample, the bar the median, the box the first to third quartile; {}.",
      better_text(r));
  fig.svg = svg::render(chart);
  return fig;
}

// The change on a percent axis: the worse side of the threshold shaded as regression.
chart::figure change_interval(const row& r, const std::string& id, double confidence) {
  const double t = r.threshold * 100;
  const bool higher = r.better == result::direction::higher;
  svg::interval_chart chart;
  chart.id = id;
  chart.value.label = "change of the median (%)";
  chart.value.unit = "%";
  chart.value.format = [](double v) { return v == 0 ? std::string("0") : fmt::format("{:+g}", v); };
  svg::interval_chart::row line;
  line.name = r.metric;
  line.estimate = (r.ratio - 1) * 100;
  if (r.ci_lo && r.ci_hi && !r.deterministic) {
    line.low = (*r.ci_lo - 1) * 100;
    line.high = (*r.ci_hi - 1) * 100;
  }
  chart.rows.push_back(line);
  chart.zones = {
      {higher ? -INFINITY : t, higher ? -t : INFINITY, "regression (worse than the threshold)"},
      {higher ? t : -INFINITY, higher ? INFINITY : -t, "improvement"}};
  chart.guides = {-t, t};
  chart.guides_label = fmt::format("threshold \u00b1{}", detail::percent(r.threshold));
  const std::string interval =
      r.ci_lo && r.ci_hi && !r.deterministic
          ? fmt::format("its {:g}% interval {}", 100 * confidence,
                        detail::interval_text(r.ci_lo, r.ci_hi))
          : std::string(r.deterministic ? "no interval: judged exactly (deterministic)"
                                        : "no interval");
  chart::figure fig;
  fig.title = fmt::format("{}: change {} against the threshold {}", r.metric,
                          detail::change_text(r.ratio), detail::percent(r.threshold));
  chart.title = fmt::format("{} \u2014 {} {}", fig.title, r.scenario, r.case_id);
  chart.description = fmt::format(
      "Interval chart: the change of the median of {} from baseline to candidate, {}, {}; "
      "threshold lines at \u00b1{}, the {} side shaded as regression. Verdict: {}.",
      r.metric, detail::change_text(r.ratio), interval, detail::percent(r.threshold),
      higher ? "lower" : "higher", to_string(r.result));
  fig.caption =
      r.deterministic
          ? std::string(
                " The diamond is the change of the value, judged exactly (the engine declares "
                "it deterministic: no interval, no test): a change into the shaded regression "
                "zone is a regression.")
          : fmt::format(
                " The diamond is the change of the median, the whisker {}; a regression needs "
                "the whole interval in the shaded regression zone and a significant test.",
                interval);
  fig.svg = svg::render(chart);
  return fig;
}

std::string metric_section(const comparison& c, const row& r, std::size_t index,
                           const result::run_result& base, const result::run_result& current) {
  const std::string id = row_anchor(index);
  std::string out = fmt::format(
      "<section class=\"metric\" id=\"{}\" aria-labelledby=\"{}-h\">\n<h3 id=\"{}-h\">{} "
      "\u2014 <span class=\"{}\">{}</span></h3>\n<p>{}</p>\n",
      id, id, id, escape(detail::subject_text(r.scenario, r.case_id, r.metric)), verdict_class(r),
      to_string(r.result), escape(one_line(r.reason)));
  const auto* b = find_metric(base, r);
  const auto* k = find_metric(current, r);
  // A chart with nothing to draw would mislead: say what is missing instead.
  if (finite_samples(b).empty() && finite_samples(k).empty())
    out += "<p>No samples on either side to draw.</p>\n";
  else
    out += chart::html::figure_html(distributions(r, id + "-samples", b, k));
  if (std::isfinite(r.ratio))
    out += chart::html::figure_html(change_interval(r, id + "-change", c.settings.confidence));
  else
    out += "<p>No change of the median to draw (see the reason above).</p>\n";
  return out + "</section>\n";
}

}  // namespace

std::string to_html(const comparison& c, const result::run_result& base,
                    const result::run_result& current) {
  const auto rows = in_attention_order(c);
  std::string out = chart::html::page_head(fmt::format("pinbench compare: {}", title_text(c)),
                                           c.current.tool_version, style_sheet);
  out += header(c) + "<main>\n" + verdict_cards(c, rows) + verdict_table(c, rows);
  std::string sections;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (charted(*rows[i])) sections += metric_section(c, *rows[i], i, base, current);
  if (!sections.empty())
    out +=
        "<section id=\"metrics\" aria-labelledby=\"metrics-h\">\n<h2 id=\"metrics-h\">Gated "
        "metrics: samples and intervals</h2>\n" +
        sections + "</section>\n";
  out += unpaired_list(c);
  return out + "</main>\n</body>\n</html>\n";
}

}  // namespace pinbench::gate
