// The comparison as GitHub-flavoured Markdown, for $GITHUB_STEP_SUMMARY or a PR comment.
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.hpp"
#include "gate/output.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

std::string table_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) line += " " + c + " |";
  return line + "\n";
}

std::string rule_row(std::size_t columns, std::size_t first_numeric, std::size_t last_numeric) {
  std::vector<std::string> rule;
  for (std::size_t i = 0; i < columns; ++i)
    rule.push_back(i >= first_numeric && i <= last_numeric ? "---:" : ":---");
  return table_row(rule);
}

std::string verdict_cell(const row& r) {
  std::string v(to_string(r.result));
  if (r.gated && (r.result == verdict::regression || r.result == verdict::failed))
    return "**" + v + "**";
  return v;
}

// scenario, then row_cells (case .. verdict), optionally the reason.
std::vector<std::string> md_cells(const row& r, bool with_reason) {
  const auto cells = detail::row_cells(r);
  std::vector<std::string> out{markdown_cell(r.scenario), markdown_code(cells[0], true)};
  for (std::size_t i = 1; i + 1 < cells.size(); ++i) out.push_back(markdown_cell(cells[i]));
  out.push_back(verdict_cell(r));
  if (with_reason) out.push_back(markdown_cell(r.reason));
  return out;
}

std::string rows_table(const comparison& c, const std::vector<const row*>& rows, bool with_reason) {
  std::vector<std::string> headers{"scenario"};
  for (const auto& h : detail::row_headers(c.settings)) headers.push_back(h);
  if (with_reason) headers.push_back("reason");
  std::string out = table_row(headers) + rule_row(headers.size(), 3, 8);
  for (const auto* r : rows) out += table_row(md_cells(*r, with_reason));
  return out;
}

}  // namespace

std::string to_markdown(const comparison& c) {
  const int code = c.exit_code();
  std::string title = code == 0 ? "passed" : "failed";
  if (c.settings.fail == fail_on::never) title = "report only";
  std::string out = "## pinbench compare: " + title + "\n\n";
  out += "**" + markdown_cell(c.outcome_line()) + "**\n\n";
  out += markdown_cell(c.summary_line()) + "\n\n";
  out += "| | file | backend | device | created |\n|:---|:---|:---|:---|:---|\n";
  for (const auto* e : {&c.base, &c.current}) {
    out += table_row({e == &c.base ? "base" : "current", markdown_code(e->label, true),
                      markdown_cell(e->backend), markdown_cell(e->device), markdown_cell(e->created)});
  }
  out += "\nRule: " + markdown_cell(detail::rule_text(c.settings)) +
         ". Statistics: " + markdown_cell(detail::method_text(c.settings)) + ".\n";
  if (!c.warnings.empty()) {
    out += "\n";
    for (const auto& w : c.warnings) out += "> warning: " + markdown_cell(w) + "\n";
  }
  if (!c.tune_notes.empty()) {
    out += "\n";
    for (const auto& n : c.tune_notes) out += "> tune: " + markdown_cell(n) + "\n";
  }
  if (!c.replay_notes.empty()) {
    out += "\n";
    for (const auto& n : c.replay_notes) out += "> against PyTorch: " + markdown_cell(n) + "\n";
  }

  std::vector<const row*> attention, all;
  for (const auto& r : c.rows) {
    all.push_back(&r);
    if (detail::needs_attention(r)) attention.push_back(&r);
  }
  if (!attention.empty()) {
    out += "\n### Needs attention\n\n";
    out += rows_table(c, attention, true);
  }

  if (!c.only_in_base.empty() || !c.only_in_current.empty()) {
    out += "\n### On one side only\n\n";
    const auto list = [&](const std::vector<unpaired>& items, const char* where) {
      for (const auto& u : items)
        out += fmt::format("- only in {}: {} {}{}{}\n", where, markdown_cell(u.scenario),
                           markdown_code(u.case_id.empty() ? "(default)" : u.case_id, false),
                           u.metric.empty() ? "" : " " + markdown_cell(u.metric),
                           u.gated ? "" : " (not gated)");
    };
    list(c.only_in_base, "the baseline");
    list(c.only_in_current, "the current result");
  }

  if (!all.empty()) {
    out += fmt::format("\n<details><summary>All {} compared metric{}</summary>\n\n", all.size(),
                       all.size() == 1 ? "" : "s");
    out += rows_table(c, all, false);
    out += "\n</details>\n";
  }
  return out;
}

}  // namespace pinbench::gate
