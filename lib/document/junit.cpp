// The JUnit XML writer of a test report; see document.hpp.
#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/text.hpp"
#include "document/document.hpp"

namespace pinbench::document {

namespace {

// JUnit readers show attributes on one line: line breaks become spaces before escaping.
std::string xml(std::string_view text) {
  std::string flat(text);
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  std::replace(flat.begin(), flat.end(), '\r', ' ');
  return xml_escape(flat);
}

struct tally {
  std::size_t tests = 0, failures = 0, skipped = 0;
  void add(const test_case& c) {
    ++tests;
    failures += c.outcome == test_outcome::failure ? 1 : 0;
    skipped += c.outcome == test_outcome::skipped ? 1 : 0;
  }
};

}  // namespace

std::string to_junit(const test_report& r) {
  tally all;
  for (const auto& s : r.suites)
    for (const auto& c : s.cases) all.add(c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
      xml(r.name), all.tests, all.failures, all.skipped);
  for (const auto& s : r.suites) {
    tally here;
    for (const auto& c : s.cases) here.add(c);
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        xml(s.name), here.tests, here.failures, here.skipped);
    for (const auto& c : s.cases) {
      out += fmt::format("    <testcase classname=\"pinbench.{}\" name=\"{}\" time=\"0\">\n",
                         xml(s.name), xml(c.name));
      switch (c.outcome) {
        case test_outcome::failure:
          out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                             xml(c.kind), xml(c.message), xml(c.details));
          break;
        case test_outcome::skipped:
          out += fmt::format("      <skipped message=\"{}\"/>\n", xml(c.message));
          break;
        case test_outcome::pass:
          out += fmt::format("      <system-out>{}</system-out>\n", xml(c.message));
          break;
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace pinbench::document
