// A comparison as a document (document/document.hpp) and as JUnit tests: what the terminal
// table, the Markdown summary and the JUnit file of `pinbench compare` show, built once.
#include <algorithm>
#include <string>
#include <vector>

#include "document/document.hpp"
#include "gate/output.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using document::tone;

tone verdict_tone(verdict v) {
  switch (v) {
    case verdict::regression:
    case verdict::failed:
      return tone::bad;
    case verdict::improvement:
      return tone::good;
    case verdict::inconclusive:
      return tone::caution;
    default:
      return tone::plain;
  }
}

std::string case_text(const std::string& case_id) {
  return case_id.empty() ? "(default)" : case_id;
}

// The rows of one scenario: its table, and beneath it the reasons of those that need attention.
document::section scenario_section(const comparison& c, std::size_t first, std::size_t end) {
  document::table t;
  const auto headers = detail::row_headers(c.settings);
  for (std::size_t i = 0; i < headers.size(); ++i)
    // Text columns (case, metric, verdict) align left, numbers right.
    t.columns.push_back(
        {headers[i], i >= 2 && i <= 7 ? document::align::right : document::align::left});
  document::notes reasons{{}, true};
  for (std::size_t r = first; r < end; ++r) {
    const auto& row = c.rows[r];
    std::vector<document::cell> cells;
    for (auto& text : detail::row_cells(row)) cells.emplace_back(std::move(text));
    cells.front().code = true;
    // A row the gate does not judge is information, whatever its verdict.
    cells.back().mark = row.gated ? verdict_tone(row.result) : tone::plain;
    t.rows.push_back(std::move(cells));
    if (detail::needs_attention(row))
      reasons.items.push_back({std::string(to_string(row.result)),
                               case_text(row.case_id) +
                                   (row.metric.empty() ? "" : " " + row.metric) + ": " + row.reason,
                               verdict_tone(row.result)});
  }
  document::section out;
  out.heading = c.rows[first].scenario;
  // A scenario with nothing to look at is reference material: folded where a format folds.
  out.folded = reasons.items.empty();
  out.blocks.emplace_back(std::move(t));
  if (!reasons.items.empty()) out.blocks.emplace_back(std::move(reasons));
  return out;
}

document::section unpaired_section(const std::vector<unpaired>& items, const char* where) {
  document::list l{std::string("only in ") + where, {}};
  for (const auto& u : items)
    l.items.push_back(detail::subject_text(u.scenario, u.case_id, u.metric) +
                      (u.gated ? "" : " (not gated)"));
  document::section out;
  out.blocks.emplace_back(std::move(l));
  return out;
}

std::string test_name(const std::string& case_id, const std::string& metric) {
  return case_text(case_id) + (metric.empty() ? "" : ": " + metric);
}

}  // namespace

document::document comparison_document(const comparison& c) {
  document::document d;
  const int code = c.exit_code();
  d.title = std::string("pinbench compare: ") + (c.settings.fail == fail_on::never ? "report only"
                                                 : code == 0                       ? "passed"
                                                                                   : "failed");
  d.preamble.emplace_back(document::fields{{{"base", detail::endpoint_text(c.base)},
                                            {"current", detail::endpoint_text(c.current)},
                                            {"rule", detail::rule_text(c.settings)},
                                            {"stats", detail::method_text(c.settings)}}});
  document::notes notes;
  for (const auto& w : c.warnings) notes.items.push_back({"warning", w, tone::caution});
  for (const auto& n : c.tune_notes) notes.items.push_back({"tune", n, tone::strong});
  for (const auto& n : c.replay_notes) notes.items.push_back({"against PyTorch", n, tone::strong});
  if (!notes.items.empty()) d.preamble.emplace_back(std::move(notes));

  for (std::size_t i = 0; i < c.rows.size();) {
    std::size_t end = i;
    while (end < c.rows.size() && c.rows[end].scenario == c.rows[i].scenario) ++end;
    d.sections.push_back(scenario_section(c, i, end));
    i = end;
  }
  if (!c.only_in_base.empty())
    d.sections.push_back(unpaired_section(c.only_in_base, "the baseline"));
  if (!c.only_in_current.empty())
    d.sections.push_back(unpaired_section(c.only_in_current, "the current result"));
  document::section closing;
  closing.blocks.emplace_back(document::paragraph{c.summary_line()});
  closing.blocks.emplace_back(
      document::paragraph{c.outcome_line(), code == 0 ? tone::good : tone::bad});
  d.sections.push_back(std::move(closing));
  return d;
}

document::test_report comparison_tests(const comparison& c) {
  const bool strict = c.settings.fail == fail_on::inconclusive;
  document::test_report out{"pinbench compare", {}};
  const auto suite = [&](const std::string& scenario) -> document::test_suite& {
    const auto it = std::find_if(out.suites.begin(), out.suites.end(),
                                 [&](const auto& s) { return s.name == scenario; });
    if (it != out.suites.end()) return *it;
    return out.suites.emplace_back(document::test_suite{scenario, {}});
  };
  for (const auto& r : c.rows) {
    if (!r.gated) continue;
    document::test_case t;
    t.name = test_name(r.case_id, r.metric);
    t.kind = std::string(to_string(r.result));
    t.message = t.kind + ": " + r.reason;
    if (r.metric.empty()) {
      t.details = r.reason;
    } else {
      const auto cells = detail::row_cells(r);
      t.details = "base " + cells[2] + " (n=" + std::to_string(r.base.n) + "), current " +
                  cells[3] + " (n=" + std::to_string(r.current.n) + "), change " + cells[4] +
                  ", interval " + cells[5] + ", p " + cells[6] + ", threshold " + cells[7];
    }
    if (r.result == verdict::regression || r.result == verdict::failed)
      t.outcome = document::test_outcome::failure;
    else if (r.result == verdict::inconclusive)
      t.outcome = strict ? document::test_outcome::failure : document::test_outcome::skipped;
    suite(r.scenario).cases.push_back(std::move(t));
  }
  for (const auto& u : c.only_in_base) {
    if (!u.gated) continue;
    document::test_case t;
    t.name = test_name(u.case_id, u.metric);
    t.kind = "missing";
    t.message = "missing: in the baseline but not in the current result";
    t.outcome = strict ? document::test_outcome::failure : document::test_outcome::skipped;
    suite(u.scenario).cases.push_back(std::move(t));
  }
  return out;
}

std::string to_table(const comparison& c, bool color) {
  return document::to_text(comparison_document(c), color);
}

std::string to_markdown(const comparison& c) {
  return document::to_markdown(comparison_document(c));
}

std::string to_junit(const comparison& c) {
  return document::to_junit(comparison_tests(c));
}

}  // namespace pinbench::gate
