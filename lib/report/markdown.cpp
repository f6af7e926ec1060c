// The Markdown report: the terminal table's content as GitHub-flavoured tables.
#include <string>
#include <string_view>

#include "core/text.hpp"
#include "report/fleet.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

std::string table_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) {
    line += ' ';
    line += markdown_cell(c);
    line += " |";
  }
  return line + "\n";
}

}  // namespace

std::string to_markdown(const result::run_result& r) {
  std::string out = "# pinbench results\n\n" + markdown_cell(detail::header_line(r)) + "\n";
  const auto outliers = fleet_outliers(r);
  const auto warnings = detail::environment_warnings(r);
  if (!warnings.empty()) {
    out += "\n";
    for (const auto& w : warnings) out += "> warning: " + markdown_cell(w) + "\n";
  }

  // A tune result: its answer first, with what it rests on.
  if (r.tune) {
    out += "\n## The answer (pinbench tune " + markdown_cell(r.tune->question) + ")\n\n";
    if (!r.tune->answer.empty()) out += "```\n" + r.tune->answer + "\n```\n\n";
    if (!r.tune->self_check.empty()) out += markdown_line(r.tune->self_check) + "\n\n";
    if (!r.tune->verdict.empty()) out += "**Why:** " + markdown_cell(r.tune->verdict) + "\n";
  }

  for (const auto& s : r.scenarios) {
    out += "\n## " + markdown_cell(s.name) + "\n\n";
    if (!s.description.empty()) out += markdown_line(s.description) + "\n\n";
    out += "kind: " + markdown_code(s.kind, false);
    if (!s.source.empty()) out += " \u00b7 source: " + markdown_code(s.source, false);
    out += "\n\n";
    if (s.cases.empty()) {
      out += "(no cases)\n";
      continue;
    }
    // A document has room for the whole message.
    const auto g = detail::scenario_grid(s, 0);
    std::vector<std::string> headers, rule;
    for (const auto& c : g.columns) {
      headers.push_back(c.header);
      rule.push_back(c.alignment == detail::align::right ? "---:" : ":---");
    }
    out += table_row(headers);
    std::string rule_line = "|";
    for (const auto& x : rule) rule_line += x + "|";
    out += rule_line + "\n";
    for (const auto& row : g.rows) out += table_row(row);
    if (!s.verdict.empty()) out += "\n**Verdict:** " + markdown_cell(s.verdict) + "\n";
    if (const auto conditions = detail::scenario_conditions(s); !conditions.empty()) {
      out += "\n**Conditions:**\n\n";
      for (const auto& line : conditions) out += "- " + markdown_line(line) + "\n";
    }
    if (const auto checks = detail::replay_checks(s); !checks.empty()) {
      out += "\n**Against PyTorch's decisions:**\n\n";
      for (const auto& line : checks) out += "- " + markdown_line(line) + "\n";
    }
    bool first = true;
    for (const auto& c : s.cases)
      for (const auto& w : c.warnings) {
        if (first) out += "\n";
        first = false;
        out += "- warning: " + markdown_cell(c.id.empty() ? "default" : c.id) + ": " + markdown_cell(w) + "\n";
      }
    for (const auto& o : outliers)
      if (o.scenario == s.name) {
        if (first) out += "\n";
        first = false;
        out += "- **outlier:** " + markdown_cell(describe(o)) + "\n";
      }
  }
  out += "\n" + detail::footer_line(r) + "\n";
  return out;
}

}  // namespace pinbench::report
