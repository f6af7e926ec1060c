// The terminal table: what a person reads after `pinbench run`.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.hpp"
#include "report/fleet.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

constexpr std::size_t message_limit = 60;  // the full message is in the JSON result
constexpr std::string_view gap = "  ";

using ansi::bold;
using ansi::green;
using ansi::red;
using ansi::yellow;

std::string_view status_colour(result::case_status status) {
  if (status == result::case_status::ok) return green;
  if (status == result::case_status::error) return red;
  return yellow;
}

std::string pad(std::string_view text, std::size_t width, detail::align a) {
  const auto w = display_width(text);
  const std::string fill(width > w ? width - w : 0, ' ');
  return a == detail::align::right ? fill + std::string(text) : std::string(text) + fill;
}

// The last column is left unpadded so that no line ends in blanks.
std::string draw_row(const std::vector<std::string>& cells,
                     const std::vector<detail::column>& columns,
                     const std::vector<std::size_t>& widths) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += gap;
    const bool last = i + 1 == cells.size();
    if (last && columns[i].alignment == detail::align::left)
      line += cells[i];
    else
      line += pad(cells[i], widths[i], columns[i].alignment);
  }
  return line;
}

void draw_scenario(std::string& out, const result::scenario_result& s,
                   const std::vector<fleet_outlier>& outliers, bool color) {
  std::string title = "== " + s.name + " (" + s.kind + ")";
  if (!s.description.empty()) title += " \u2014 " + s.description;
  out += paint(title, bold, color) + "\n";
  if (s.cases.empty()) {
    out += "(no cases)\n";
    return;
  }

  const auto g = detail::scenario_grid(s, message_limit);
  std::vector<std::size_t> widths(g.columns.size(), 0);
  std::vector<std::string> headers;
  for (std::size_t i = 0; i < g.columns.size(); ++i) {
    headers.push_back(g.columns[i].header);
    widths[i] = display_width(g.columns[i].header);
  }
  for (const auto& row : g.rows)
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i]));

  out += paint(draw_row(headers, g.columns, widths), bold, color) + "\n";
  for (std::size_t r = 0; r < g.rows.size(); ++r) {
    auto cells = g.rows[r];
    // Colour the status after measuring: escape codes take no columns on screen.
    cells.back() = paint(cells.back(), status_colour(g.statuses[r]), color);
    out += draw_row(cells, g.columns, widths) + "\n";
  }
  if (!s.verdict.empty()) out += paint("verdict: ", bold, color) + s.verdict + "\n";
  for (const auto& line : detail::scenario_conditions(s))
    out += paint("conditions: ", bold, color) + line + "\n";
  for (const auto& line : detail::replay_checks(s))
    out += paint("against PyTorch: ", bold, color) + line + "\n";
  for (const auto& c : s.cases)
    for (const auto& w : c.warnings)
      out +=
          paint("warning: ", yellow, color) + (c.id.empty() ? "default" : c.id) + ": " + w + "\n";
  for (const auto& o : outliers)
    if (o.scenario == s.name) out += paint("outlier: ", red, color) + describe(o) + "\n";
}

}  // namespace

std::string to_table(const result::run_result& r, bool color) {
  std::string out = paint(detail::header_line(r), bold, color) + "\n";
  for (const auto& w : detail::environment_warnings(r))
    out += paint("warning: ", yellow, color) + w + "\n";
  const auto outliers = fleet_outliers(r);
  for (const auto& s : r.scenarios) {
    out += "\n";
    draw_scenario(out, s, outliers, color);
  }
  out += '\n';
  out += detail::footer_line(r);
  out += '\n';
  // A tune result read back: why, then its answer last, as `pinbench tune` printed it.
  if (r.tune && !r.tune->self_check.empty()) out += r.tune->self_check + "\n";
  if (r.tune && !r.tune->verdict.empty()) out += "verdict: " + r.tune->verdict + "\n";
  if (r.tune && !r.tune->answer.empty()) out += "\n" + r.tune->answer + "\n";
  return out;
}

}  // namespace pinbench::report
