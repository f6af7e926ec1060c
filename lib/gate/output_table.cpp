// The terminal table of a comparison: what a person reads after `pinbench compare`.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.hpp"
#include "gate/output.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using ansi::bold;
using ansi::green;
using ansi::red;
using ansi::yellow;

std::string_view verdict_colour(verdict v) {
  switch (v) {
    case verdict::regression:
    case verdict::failed:
      return red;
    case verdict::improvement:
      return green;
    case verdict::inconclusive:
      return yellow;
    default:
      return {};
  }
}

// Code points, not bytes: the middle dot and "±" take one column each.
std::size_t width_of(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char ch) {
    return (static_cast<unsigned char>(ch) & 0xC0U) != 0x80U;
  }));
}

// Text columns (case, metric, verdict) align left, numbers right.
bool right_aligned(std::size_t column) {
  return column >= 2 && column <= 7;
}

std::string draw(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths,
                 const std::vector<std::string>& shown) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += "  ";
    const std::size_t w = width_of(cells[i]);
    const std::string fill(widths[i] > w ? widths[i] - w : 0, ' ');
    if (i + 1 == cells.size())
      line += shown[i];  // the last column unpadded: no line ends in blanks
    else
      line += right_aligned(i) ? fill + shown[i] : shown[i] + fill;
  }
  return line;
}

}  // namespace

std::string to_table(const comparison& c, bool color) {
  std::string out = paint("pinbench compare", bold, color) + "\n";
  out += "base:    " + detail::endpoint_text(c.base) + "\n";
  out += "current: " + detail::endpoint_text(c.current) + "\n";
  out += "rule:    " + detail::rule_text(c.settings) + "\n";
  out += "stats:   " + detail::method_text(c.settings) + "\n";
  for (const auto& w : c.warnings) out += paint("warning: ", yellow, color) + w + "\n";
  for (const auto& n : c.tune_notes) out += paint("tune: ", bold, color) + n + "\n";
  for (const auto& n : c.replay_notes) out += paint("against PyTorch: ", bold, color) + n + "\n";

  const auto headers = detail::row_headers(c.settings);
  for (std::size_t i = 0; i < c.rows.size();) {
    const std::string& scenario = c.rows[i].scenario;
    std::size_t end = i;
    while (end < c.rows.size() && c.rows[end].scenario == scenario) ++end;

    std::vector<std::vector<std::string>> cells;
    std::vector<std::size_t> widths;
    widths.reserve(headers.size());
    for (const auto& h : headers) widths.push_back(width_of(h));
    for (std::size_t r = i; r < end; ++r) {
      cells.push_back(detail::row_cells(c.rows[r]));
      for (std::size_t k = 0; k < widths.size(); ++k)
        widths[k] = std::max(widths[k], width_of(cells.back()[k]));
    }
    out += '\n';
    out += paint("== " + scenario, bold, color);
    out += '\n';
    out += paint(draw(headers, widths, headers), bold, color) + "\n";
    for (std::size_t r = i; r < end; ++r) {
      auto shown = cells[r - i];
      // Colour after measuring: escape codes take no columns on screen.
      shown.back() = paint(shown.back(), verdict_colour(c.rows[r].result), color);
      out += draw(cells[r - i], widths, shown) + "\n";
    }
    for (std::size_t r = i; r < end; ++r) {
      const auto& row = c.rows[r];
      if (!detail::needs_attention(row)) continue;
      const std::string label = std::string(to_string(row.result)) + ": ";
      out += "  " + paint(label, verdict_colour(row.result), color) +
             (row.case_id.empty() ? "(default)" : row.case_id) +
             (row.metric.empty() ? "" : " " + row.metric) + ": " + row.reason + "\n";
    }
    i = end;
  }

  const auto list = [&](const std::vector<unpaired>& items, const char* where) {
    if (items.empty()) return;
    out += '\n';
    out += paint(std::string("only in ") + where + ":", bold, color);
    out += '\n';
    for (const auto& u : items)
      out += "  " + detail::subject_text(u.scenario, u.case_id, u.metric) +
             (u.gated ? "" : " (not gated)") + "\n";
  };
  list(c.only_in_base, "the baseline");
  list(c.only_in_current, "the current result");

  out += "\n" + c.summary_line() + "\n";
  const int code = c.exit_code();
  out += paint(c.outcome_line(), code == 0 ? green : red, color) + "\n";
  return out;
}

}  // namespace pinbench::gate
