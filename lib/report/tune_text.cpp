// A `pinbench tune` result on the terminal: the trials ranked, the chosen one marked, then the
// answer, last, where a person's eye (and `tail -1`) finds it.
#include <algorithm>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

// The ranked table stays readable on a terminal; the result holds every trial.
constexpr std::size_t max_rows = 16;

std::string padded(const std::string& text, std::size_t width) {
  const std::size_t w = display_width(text);
  return text + std::string(width > w ? width - w : 0, ' ');
}

}  // namespace

std::string tune_text(const result::run_result& r) {
  if (!r.tune) return {};
  const result::tune_block& t = *r.tune;
  std::string out = detail::header_line(r) + "\n";
  for (const auto& w : detail::environment_warnings(r)) out += "warning: " + w + "\n";
  out += "\n";

  // Columns: the mark, the setting, then every cell column in the order first seen.
  std::vector<std::string> columns;
  for (const auto& trial : t.trials)
    for (const auto& [column, text] : trial.cells)
      if (std::find(columns.begin(), columns.end(), column) == columns.end())
        columns.push_back(column);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"", "setting"});
  for (const auto& c : columns) rows.back().push_back(c);
  std::size_t left_out = 0;
  for (std::size_t i = 0; i < t.trials.size(); ++i) {
    const auto& trial = t.trials[i];
    if (i >= max_rows && t.chosen != i && t.baseline != i) {
      ++left_out;
      continue;
    }
    std::string mark = t.chosen == i ? "->" : "";
    std::string label = trial.label.empty() ? "(defaults)" : trial.label;
    if (t.baseline == i) label += " (in use)";
    std::vector<std::string> row{mark, label};
    for (const auto& c : columns) {
      const auto it = std::find_if(trial.cells.begin(), trial.cells.end(),
                                   [&](const auto& cell) { return cell.first == c; });
      row.push_back(it == trial.cells.end() ? "-" : it->second);
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i]));
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += i + 1 == row.size() ? row[i] : padded(row[i], widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (left_out > 0)
    out += "(" + std::to_string(left_out) +
           " more trial(s), ranked lower, in the result: --out FILE or --format json)\n";
  out += "\n";
  if (!t.stopped_by.empty())
    out += std::string("note: the search was cut short (") +
           (t.stopped_by == "budget" ? "its --budget was spent" : t.stopped_by) +
           "): the answer is the best of the " + std::to_string(t.trials.size()) +
           " trial(s) above\n";
  if (!t.self_check.empty()) out += t.self_check + "\n";
  if (!t.verdict.empty()) out += "verdict: " + t.verdict + "\n";
  out += detail::footer_line(r) + "\n";
  if (!t.answer.empty()) out += "\n" + t.answer + "\n";
  return out;
}

}  // namespace pinbench::report
