// A result as a document (document/document.hpp): what the terminal table, the Markdown report
// and `tune`'s ranked trials show, built once; the writers render it.
#include <algorithm>
#include <string>
#include <vector>

#include "document/document.hpp"
#include "report/fleet.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

using document::tone;

// The ranked table stays readable on a terminal; the result holds every trial.
constexpr std::size_t max_trial_rows = 16;

tone status_tone(result::case_status status) {
  switch (status) {
    case result::case_status::ok:
      return tone::good;
    case result::case_status::error:
      return tone::bad;
    default:
      return tone::caution;
  }
}

document::notes environment_notes(const result::run_result& r) {
  document::notes n;
  for (const auto& w : detail::environment_warnings(r))
    n.items.push_back({"warning", w, tone::caution});
  return n;
}

document::table cases_table(const result::scenario_result& s, std::size_t message_limit) {
  const auto g = detail::scenario_grid(s, message_limit);
  document::table t;
  t.columns = g.columns;
  for (std::size_t r = 0; r < g.rows.size(); ++r) {
    std::vector<document::cell> row;
    for (std::size_t i = 0; i < g.rows[r].size(); ++i)
      row.emplace_back(g.rows[r][i], tone::plain, i == 0);  // the case id: an identifier
    row.back().mark = status_tone(g.statuses[r]);
    t.rows.push_back(std::move(row));
  }
  return t;
}

document::section scenario_section(const result::scenario_result& s,
                                   const std::vector<fleet_outlier>& outliers,
                                   std::size_t message_limit) {
  document::section out;
  out.heading = s.name + " (" + s.kind + ")";
  if (!s.description.empty()) out.heading += " \u2014 " + s.description;
  if (s.cases.empty()) {
    out.blocks.emplace_back(document::paragraph{"(no cases)"});
    return out;
  }
  out.blocks.emplace_back(cases_table(s, message_limit));
  document::notes n;
  if (!s.verdict.empty()) n.items.push_back({"verdict", s.verdict, tone::strong});
  for (const auto& line : detail::scenario_conditions(s))
    n.items.push_back({"conditions", line, tone::strong});
  for (const auto& line : detail::replay_checks(s))
    n.items.push_back({"against PyTorch", line, tone::strong});
  for (const auto& c : s.cases)
    for (const auto& w : c.warnings)
      n.items.push_back({"warning", (c.id.empty() ? "default" : c.id) + ": " + w, tone::caution});
  for (const auto& o : outliers)
    if (o.scenario == s.name) n.items.push_back({"outlier", describe(o), tone::bad});
  if (!n.items.empty()) out.blocks.emplace_back(std::move(n));
  return out;
}

// The tune block's trials ranked, the chosen one marked ("->"), the baseline "(in use)".
document::section trials_section(const result::tune_block& t) {
  std::vector<std::string> columns;
  for (const auto& trial : t.trials)
    for (const auto& [column, text] : trial.cells)
      if (std::find(columns.begin(), columns.end(), column) == columns.end())
        columns.push_back(column);
  document::table table;
  table.columns = {{""}, {"setting"}};
  for (const auto& c : columns) table.columns.push_back({c});
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < t.trials.size(); ++i) {
    const auto& trial = t.trials[i];
    if (i >= max_trial_rows && t.chosen != i && t.baseline != i) {
      ++left_out;
      continue;
    }
    std::string label = trial.label.empty() ? "(defaults)" : trial.label;
    if (t.baseline == i) label += " (in use)";
    std::vector<document::cell> row{{t.chosen == i ? "->" : "", tone::strong}, {label}};
    for (const auto& c : columns) {
      const auto it = std::find_if(trial.cells.begin(), trial.cells.end(),
                                   [&](const auto& cell) { return cell.first == c; });
      row.emplace_back(it == trial.cells.end() ? "-" : it->second);
    }
    table.rows.push_back(std::move(row));
  }
  document::section out;
  out.blocks.emplace_back(std::move(table));
  if (left_out > 0)
    out.blocks.emplace_back(document::paragraph{
        "(" + std::to_string(left_out) +
        " more trial(s), ranked lower, in the result: --out FILE or --format json)"});
  return out;
}

// Why a search stopped early, the replay's check of itself and the verdict: what the answer
// rests on.
std::vector<document::block> tune_reasons(const result::tune_block& t) {
  std::vector<document::block> out;
  if (t.stopped_by != result::search_stop::none)
    out.emplace_back(document::notes{
        {{"note",
          "the search was cut short (" +
              (t.stopped_by == result::search_stop::budget ? std::string("its --budget was spent")
                                                           : std::string(to_string(t.stopped_by))) +
              "): the answer is the best of the " + std::to_string(t.trials.size()) +
              " trial(s) above",
          tone::caution}}});
  if (!t.self_check.empty()) out.emplace_back(document::paragraph{t.self_check});
  if (!t.verdict.empty()) out.emplace_back(document::notes{{{"verdict", t.verdict, tone::strong}}});
  return out;
}

void add_answer(document::document& d, const result::tune_block& t) {
  if (t.answer.empty()) return;
  document::section answer;
  answer.blocks.emplace_back(document::verbatim{t.answer});
  d.sections.push_back(std::move(answer));
}

}  // namespace

document::document run_document(const result::run_result& r, std::size_t message_limit) {
  document::document d;
  d.title = detail::header_line(r);
  if (auto warnings = environment_notes(r); !warnings.items.empty())
    d.preamble.emplace_back(std::move(warnings));
  const auto outliers = fleet_outliers(r);
  for (const auto& s : r.scenarios)
    d.sections.push_back(scenario_section(s, outliers, message_limit));
  // A tune result read back: its trials, why, then its answer last, as `pinbench tune` printed
  // it.
  if (r.tune && !r.tune->trials.empty()) d.sections.push_back(trials_section(*r.tune));
  document::section closing;
  closing.blocks.emplace_back(document::paragraph{detail::footer_line(r)});
  if (r.tune)
    for (auto& b : tune_reasons(*r.tune)) closing.blocks.push_back(std::move(b));
  d.sections.push_back(std::move(closing));
  if (r.tune) add_answer(d, *r.tune);
  return d;
}

document::document tune_document(const result::run_result& r) {
  document::document d;
  d.title = detail::header_line(r);
  if (auto warnings = environment_notes(r); !warnings.items.empty())
    d.preamble.emplace_back(std::move(warnings));
  if (!r.tune) return d;
  d.sections.push_back(trials_section(*r.tune));
  document::section closing;
  closing.blocks = tune_reasons(*r.tune);
  closing.blocks.emplace_back(document::paragraph{detail::footer_line(r)});
  d.sections.push_back(std::move(closing));
  add_answer(d, *r.tune);
  return d;
}

std::string to_table(const result::run_result& r, bool color) {
  constexpr std::size_t message_limit = 60;  // the full message is in the JSON result
  return document::to_text(run_document(r, message_limit), color);
}

std::string to_markdown(const result::run_result& r) {
  return document::to_markdown(run_document(r, 0));  // a document has room for the whole message
}

std::string tune_text(const result::run_result& r) {
  return r.tune ? document::to_text(tune_document(r)) : std::string();
}

}  // namespace pinbench::report
