// The writers of `pinbench check` (gate/reference.hpp): the terminal table, pinbench.check/1
// JSON, Markdown for a step summary and JUnit XML, the forms `compare` writes too.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.hpp"
#include "gate/reference.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using ojson = nlohmann::ordered_json;

std::string_view outcome_colour(check_outcome o) {
  switch (o) {
    case check_outcome::outside:
    case check_outcome::failed:
      return ansi::red;
    case check_outcome::missing:
      return ansi::yellow;
    case check_outcome::inside:
      return {};
  }
  return {};
}

std::string bound_text(const std::optional<double>& b, const std::string& unit, const char* open) {
  return b ? detail::value_text(*b, unit) : std::string(open);
}

// case, metric, measured, reference, bounds, outcome: what every tabular writer shows.
std::vector<std::string> check_cells(const reference_check& c) {
  return {c.case_id,
          c.metric,
          c.measured ? detail::value_text(*c.measured, c.unit) : std::string("-"),
          detail::value_text(c.reference_value, c.unit),
          "[" + bound_text(c.lower_bound, c.unit, "-inf") + ", " +
              bound_text(c.upper_bound, c.unit, "+inf") + "]",
          std::string(to_string(c.outcome))};
}

const std::vector<std::string> check_headers{"case",      "metric", "measured",
                                             "reference", "bounds", "outcome"};

bool check_needs_attention(const reference_check& c) {
  return c.outcome != check_outcome::inside;
}

std::string system_line(const reference_report& rep) {
  std::string s = "backend " + (rep.backend.empty() ? std::string("unknown") : rep.backend);
  if (!rep.device.empty()) s += " · device " + rep.device;
  if (!rep.host.empty()) s += " · host " + rep.host;
  return s;
}

std::string check_summary_line(const reference_report& rep) {
  return fmt::format("{} inside, {} outside, {} failed, {} missing; {} not run",
                     rep.count(check_outcome::inside), rep.count(check_outcome::outside),
                     rep.count(check_outcome::failed), rep.count(check_outcome::missing),
                     rep.not_run.size());
}

// The checks of each scenario together, in the order the scenarios first appear.
template <typename Visit>
void by_scenario(const reference_report& rep, Visit&& visit) {
  std::vector<std::string> order;
  for (const auto& c : rep.checks)
    if (std::find(order.begin(), order.end(), c.scenario) == order.end())
      order.push_back(c.scenario);
  for (const auto& s : order) {
    std::vector<const reference_check*> rows;
    for (const auto& c : rep.checks)
      if (c.scenario == s) rows.push_back(&c);
    visit(s, rows);
  }
}

std::string md_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) line += " " + c + " |";
  return line + "\n";
}

std::string md_table(const std::vector<const reference_check*>& rows, bool with_reason) {
  std::vector<std::string> head{"scenario"};
  head.insert(head.end(), check_headers.begin(), check_headers.end());
  if (with_reason) head.push_back("reason");
  std::string out = md_row(head);
  std::vector<std::string> rule;
  for (std::size_t i = 0; i < head.size(); ++i) rule.push_back(i >= 3 && i <= 5 ? "---:" : ":---");
  out += md_row(rule);
  for (const auto* c : rows) {
    const auto cells = check_cells(*c);
    std::vector<std::string> line{markdown_cell(c->scenario), markdown_code(cells[0], true)};
    for (std::size_t i = 1; i + 1 < cells.size(); ++i) line.push_back(markdown_cell(cells[i]));
    line.push_back(c->outcome == check_outcome::outside || c->outcome == check_outcome::failed
                       ? "**" + cells.back() + "**"
                       : cells.back());
    if (with_reason) line.push_back(markdown_cell(c->reason));
    out += md_row(line);
  }
  return out;
}

ojson json_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? ojson(*v) : ojson(nullptr);
}

}  // namespace

std::string to_table(const reference_report& rep, bool color) {
  std::string out = paint("pinbench check", ansi::bold, color) + "\n";
  out += "result:     " + rep.result_path + " · " + system_line(rep) + "\n";
  out += "references: " + rep.references_path + " · applied: " +
         (rep.systems.empty() ? std::string("none")
                              : fmt::format("{}", fmt::join(rep.systems, ", "))) +
         "\n";
  by_scenario(rep, [&](const std::string& scenario,
                       const std::vector<const reference_check*>& rows) {
    std::vector<std::size_t> widths;
    widths.reserve(check_headers.size());
    for (const auto& h : check_headers) widths.push_back(display_width(h));
    std::vector<std::vector<std::string>> cells;
    for (const auto* c : rows) {
      cells.push_back(check_cells(*c));
      for (std::size_t k = 0; k < widths.size(); ++k)
        widths[k] = std::max(widths[k], display_width(cells.back()[k]));
    }
    const auto draw = [&](const std::vector<std::string>& line, std::string_view colour) {
      std::string text;
      for (std::size_t k = 0; k < line.size(); ++k) {
        if (k > 0) text += "  ";
        const std::string fill(widths[k] - display_width(line[k]), ' ');
        const bool numeric = k >= 2 && k <= 4;
        if (k + 1 == line.size())
          text += paint(line[k], colour, color);  // the last column unpadded
        else
          text += numeric ? fill + line[k] : line[k] + fill;
      }
      return text + "\n";
    };
    out += "\n" + paint("== " + scenario, ansi::bold, color) + "\n";
    out += draw(check_headers, {});
    for (std::size_t i = 0; i < rows.size(); ++i)
      out += draw(cells[i], outcome_colour(rows[i]->outcome));
    for (const auto* c : rows)
      if (check_needs_attention(*c))
        out += "  " +
               paint(std::string(to_string(c->outcome)) + ": ", outcome_colour(c->outcome), color) +
               c->case_id + " " + c->metric + ": " + c->reason + "\n";
  });
  if (!rep.not_run.empty()) {
    out += "\n" + paint("not run", ansi::bold, color) +
           " (the scenario is not in this result; never a failure):\n";
    for (const auto& n : rep.not_run) out += "  " + n + "\n";
  }
  out += "\n" + check_summary_line(rep) + "\n";
  out += paint(rep.outcome_line(), rep.exit_code() == 0 ? ansi::green : ansi::red, color) + "\n";
  return out;
}

ojson to_json(const reference_report& rep) {
  ojson out = ojson::object();
  out["schema"] = "pinbench.check/1";
  out["result"] = {{"file", rep.result_path},
                   {"backend", rep.backend},
                   {"device", rep.device},
                   {"host", rep.host}};
  out["references"] = {
      {"file", rep.references_path}, {"systems_applied", rep.systems}, {"systems", rep.selectors}};
  out["strict"] = rep.settings.strict;
  ojson checks = ojson::array();
  for (const auto& c : rep.checks)
    checks.push_back({{"system", c.system},
                      {"scenario", c.scenario},
                      {"case", c.case_id},
                      {"metric", c.metric},
                      {"unit", c.unit},
                      {"measured", json_number(c.measured)},
                      {"samples", c.samples},
                      {"reference", c.reference_value},
                      {"lower", json_number(c.lower)},
                      {"upper", json_number(c.upper)},
                      {"lower_bound", json_number(c.lower_bound)},
                      {"upper_bound", json_number(c.upper_bound)},
                      {"outcome", std::string(to_string(c.outcome))},
                      {"reason", c.reason},
                      {"where", c.where}});
  out["checks"] = std::move(checks);
  out["not_run"] = rep.not_run;
  out["counts"] = {{"inside", rep.count(check_outcome::inside)},
                   {"outside", rep.count(check_outcome::outside)},
                   {"failed", rep.count(check_outcome::failed)},
                   {"missing", rep.count(check_outcome::missing)},
                   {"not_run", rep.not_run.size()}};
  out["outcome"] = rep.outcome_line();
  out["exit_code"] = rep.exit_code();
  return out;
}

std::string to_markdown(const reference_report& rep) {
  const int code = rep.exit_code();
  std::string out = std::string("## pinbench check: ") +
                    (code == 0   ? "passed"
                     : code == 1 ? "failed"
                                 : "not judged") +
                    "\n\n";
  out += "**" + markdown_cell(rep.outcome_line()) + "**\n\n";
  out += markdown_cell(check_summary_line(rep)) + "\n\n";
  out += "Result " + markdown_code(rep.result_path, false) + " (" +
         markdown_cell(system_line(rep)) + "), references " +
         markdown_code(rep.references_path, false) + ", applied: " +
         markdown_cell(rep.systems.empty() ? std::string("none")
                                           : fmt::format("{}", fmt::join(rep.systems, ", "))) +
         ".\n";
  std::vector<const reference_check*> attention, all;
  for (const auto& c : rep.checks) {
    all.push_back(&c);
    if (check_needs_attention(c)) attention.push_back(&c);
  }
  if (!attention.empty()) out += "\n### Needs attention\n\n" + md_table(attention, true);
  if (!rep.not_run.empty()) {
    out += "\n### Not run\n\n";
    for (const auto& n : rep.not_run) out += "- " + markdown_cell(n) + "\n";
  }
  if (!all.empty())
    out += fmt::format("\n<details><summary>All {} referenced figure{}</summary>\n\n", all.size(),
                       all.size() == 1 ? "" : "s") +
           md_table(all, false) + "\n</details>\n";
  return out;
}

std::string to_junit(const reference_report& rep) {
  const auto attr = [](std::string_view t) { return xml_escape(detail::one_line(t)); };
  const auto failing = [&](const reference_check& c) {
    return c.outcome == check_outcome::outside || c.outcome == check_outcome::failed ||
           (c.outcome == check_outcome::missing && rep.settings.strict);
  };
  const auto skipped = [&](const reference_check& c) {
    return c.outcome == check_outcome::missing && !rep.settings.strict;
  };
  const auto tally = [&](const std::vector<const reference_check*>& rows, auto&& pred) {
    return static_cast<std::size_t>(
        std::count_if(rows.begin(), rows.end(), [&](const auto* c) { return pred(*c); }));
  };
  std::vector<const reference_check*> all;
  for (const auto& c : rep.checks) all.push_back(&c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"pinbench check\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"{}\">\n",
      all.size(), tally(all, failing), tally(all, skipped));
  by_scenario(rep, [&](const std::string& scenario,
                       const std::vector<const reference_check*>& rows) {
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        attr(scenario), rows.size(), tally(rows, failing), tally(rows, skipped));
    for (const auto* c : rows) {
      const auto cells = check_cells(*c);
      const std::string details = fmt::format("measured {}, reference {}, bounds {} ({})", cells[2],
                                              cells[3], cells[4], c->where);
      out += fmt::format("    <testcase classname=\"pinbench.{}\" name=\"{}: {}\" time=\"0\">\n",
                         attr(scenario), attr(c->case_id), attr(c->metric));
      const std::string message =
          std::string(to_string(c->outcome)) + (c->reason.empty() ? "" : ": " + c->reason);
      if (failing(*c))
        out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                           to_string(c->outcome), attr(message), attr(details));
      else if (skipped(*c))
        out += fmt::format("      <skipped message=\"{}\"/>\n", attr(message));
      else
        out += fmt::format("      <system-out>{}</system-out>\n", attr(details));
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  });
  out += "</testsuites>\n";
  return out;
}

}  // namespace pinbench::gate
