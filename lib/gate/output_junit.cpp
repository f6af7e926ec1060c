// The comparison as JUnit XML: CI systems (GitHub, GitLab, Jenkins) show gated metrics as tests.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.hpp"
#include "gate/output.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

// JUnit readers show attributes on one line: line breaks become spaces before escaping.
std::string xml(std::string_view text) {
  std::string flat(text);
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  std::replace(flat.begin(), flat.end(), '\r', ' ');
  return xml_escape(flat);
}


enum class outcome { pass, failure, skipped };

struct test {
  std::string scenario, name, kind, message, details;
  outcome result = outcome::pass;
};

std::string details_of(const row& r) {
  const auto cells = detail::row_cells(r);
  return fmt::format(
      "base {} (n={}), current {} (n={}), change {}, interval {}, p {}, threshold {}", cells[2],
      r.base.n, cells[3], r.current.n, cells[4], cells[5], cells[6], cells[7]);
}

std::vector<test> tests_of(const comparison& c) {
  const bool strict = c.settings.fail == fail_on::inconclusive;
  std::vector<test> out;
  for (const auto& r : c.rows) {
    if (!r.gated) continue;
    test t;
    t.scenario = r.scenario;
    t.name =
        (r.case_id.empty() ? "(default)" : r.case_id) + (r.metric.empty() ? "" : ": " + r.metric);
    t.kind = std::string(to_string(r.result));
    t.message = t.kind + ": " + r.reason;
    t.details = r.metric.empty() ? r.reason : details_of(r);
    if (r.result == verdict::regression || r.result == verdict::failed)
      t.result = outcome::failure;
    else if (r.result == verdict::inconclusive)
      t.result = strict ? outcome::failure : outcome::skipped;
    out.push_back(std::move(t));
  }
  for (const auto& u : c.only_in_base) {
    if (!u.gated) continue;
    test t;
    t.scenario = u.scenario;
    t.name =
        (u.case_id.empty() ? "(default)" : u.case_id) + (u.metric.empty() ? "" : ": " + u.metric);
    t.kind = "missing";
    t.message = "missing: in the baseline but not in the current result";
    t.result = strict ? outcome::failure : outcome::skipped;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::string to_junit(const comparison& c) {
  const auto tests = tests_of(c);
  // Suites in the order their scenarios first appear.
  std::vector<std::string> suites;
  for (const auto& t : tests)
    if (std::find(suites.begin(), suites.end(), t.scenario) == suites.end())
      suites.push_back(t.scenario);
  const auto tally = [&](const std::string* scenario, outcome o) {
    std::size_t n = 0;
    for (const auto& t : tests)
      if ((scenario == nullptr || t.scenario == *scenario) && t.result == o) ++n;
    return n;
  };
  const auto size = [&](const std::string* scenario) {
    std::size_t n = 0;
    for (const auto& t : tests) n += scenario == nullptr || t.scenario == *scenario ? 1 : 0;
    return n;
  };

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"pinbench compare\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"{}\">\n",
      size(nullptr), tally(nullptr, outcome::failure), tally(nullptr, outcome::skipped));
  for (const auto& s : suites) {
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        xml(s), size(&s), tally(&s, outcome::failure), tally(&s, outcome::skipped));
    for (const auto& t : tests) {
      if (t.scenario != s) continue;
      out += fmt::format("    <testcase classname=\"pinbench.{}\" name=\"{}\" time=\"0\"", xml(s),
                         xml(t.name));
      switch (t.result) {
        case outcome::failure:
          out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                             xml(t.kind), xml(t.message), xml(t.details));
          out += "    </testcase>\n";
          break;
        case outcome::skipped:
          out +=
              fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml(t.message));
          break;
        case outcome::pass:
          out += fmt::format(">\n      <system-out>{}</system-out>\n    </testcase>\n",
                             xml(t.message));
          break;
      }
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace pinbench::gate
