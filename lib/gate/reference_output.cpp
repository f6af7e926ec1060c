// What `pinbench check` writes (gate/reference.hpp): its document (the terminal table and
// Markdown render it), its JUnit tests and pinbench.check/1 JSON.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/units.hpp"
#include "document/document.hpp"
#include "gate/reference.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using ojson = nlohmann::ordered_json;

document::tone outcome_tone(check_outcome o) {
  switch (o) {
    case check_outcome::outside:
    case check_outcome::failed:
      return document::tone::bad;
    case check_outcome::missing:
      return document::tone::caution;
    case check_outcome::inside:
      return document::tone::plain;
  }
  return document::tone::plain;
}

std::string bound_text(const std::optional<double>& b, const std::string& unit, const char* open) {
  return b ? format_value(*b, unit, unit_place::in_cell) : std::string(open);
}

// case, metric, measured, reference, bounds, outcome: what every tabular writer shows.
std::vector<std::string> check_cells(const reference_check& c) {
  return {c.case_id,
          c.metric,
          c.measured ? format_value(*c.measured, c.unit, unit_place::in_cell) : std::string("-"),
          format_value(c.reference_value, c.unit, unit_place::in_cell),
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

ojson json_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? ojson(*v) : ojson(nullptr);
}

}  // namespace

document::document check_document(const reference_report& rep) {
  document::document d;
  const int code = rep.exit_code();
  d.title = std::string("pinbench check: ") + (code == 0   ? "passed"
                                               : code == 1 ? "failed"
                                                           : "not judged");
  d.preamble.emplace_back(document::fields{
      {{"result", rep.result_path + " \u00b7 " + system_line(rep)},
       {"references",
        rep.references_path + " \u00b7 applied: " +
            (rep.systems.empty() ? std::string("none")
                                 : fmt::format("{}", fmt::join(rep.systems, ", ")))}}});
  by_scenario(
      rep, [&](const std::string& scenario, const std::vector<const reference_check*>& rows) {
        document::table t;
        for (std::size_t k = 0; k < check_headers.size(); ++k)
          t.columns.push_back({check_headers[k],
                               k >= 2 && k <= 4 ? document::align::right : document::align::left});
        document::notes reasons{{}, true};
        for (const auto* c : rows) {
          std::vector<document::cell> cells;
          for (auto& text : check_cells(*c)) cells.emplace_back(std::move(text));
          cells.front().code = true;
          cells.back().mark = outcome_tone(c->outcome);
          t.rows.push_back(std::move(cells));
          if (check_needs_attention(*c))
            reasons.items.push_back({std::string(to_string(c->outcome)),
                                     c->case_id + " " + c->metric + ": " + c->reason,
                                     outcome_tone(c->outcome)});
        }
        document::section section;
        section.heading = scenario;
        section.folded = reasons.items.empty();
        section.blocks.emplace_back(std::move(t));
        if (!reasons.items.empty()) section.blocks.emplace_back(std::move(reasons));
        d.sections.push_back(std::move(section));
      });
  if (!rep.not_run.empty()) {
    document::section not_run;
    not_run.blocks.emplace_back(document::list{
        "not run (the scenario is not in this result; never a failure)", rep.not_run});
    d.sections.push_back(std::move(not_run));
  }
  document::section closing;
  closing.blocks.emplace_back(document::paragraph{check_summary_line(rep)});
  closing.blocks.emplace_back(document::paragraph{
      rep.outcome_line(), code == 0 ? document::tone::good : document::tone::bad});
  d.sections.push_back(std::move(closing));
  return d;
}

document::test_report check_tests(const reference_report& rep) {
  document::test_report out{"pinbench check", {}};
  by_scenario(rep,
              [&](const std::string& scenario, const std::vector<const reference_check*>& rows) {
                document::test_suite suite{scenario, {}};
                for (const auto* c : rows) {
                  const auto cells = check_cells(*c);
                  document::test_case t;
                  t.name = c->case_id + ": " + c->metric;
                  t.kind = std::string(to_string(c->outcome));
                  t.details = fmt::format("measured {}, reference {}, bounds {} ({})", cells[2],
                                          cells[3], cells[4], c->where);
                  const std::string message = t.kind + (c->reason.empty() ? "" : ": " + c->reason);
                  const bool missing = c->outcome == check_outcome::missing;
                  if (c->outcome == check_outcome::outside || c->outcome == check_outcome::failed ||
                      (missing && rep.settings.strict)) {
                    t.outcome = document::test_outcome::failure;
                    t.message = message;
                  } else if (missing) {
                    t.outcome = document::test_outcome::skipped;
                    t.message = message;
                  } else {
                    t.message = t.details;  // a pass shows its figures
                  }
                  suite.cases.push_back(std::move(t));
                }
                out.suites.push_back(std::move(suite));
              });
  return out;
}

std::string to_table(const reference_report& rep, bool color) {
  return document::to_text(check_document(rep), color);
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
  return document::to_markdown(check_document(rep));
}

std::string to_junit(const reference_report& rep) {
  return document::to_junit(check_tests(rep));
}

}  // namespace pinbench::gate
