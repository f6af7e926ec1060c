// The document writers (document/document.hpp) on one document that holds every block: each
// writer's output is a golden file, so a change to how any format renders shows in review.
#include <catch2/catch.hpp>

#include <string>

#include "document/document.hpp"
#include "golden.hpp"

using namespace pinbench;
using document::align;
using document::tone;

namespace {

document::document every_block() {
  document::document d;
  d.title = "pinbench sample: failed";
  d.preamble.emplace_back(document::fields{{{"base", "a.json"}, {"current", "b`c.json"}}});
  d.preamble.emplace_back(document::notes{{{"warning", "one run | no history", tone::caution}}});
  document::section s;
  s.heading = "scenario [x](http://y)";
  s.blocks.emplace_back(document::table{
      {{"case"}, {"value", align::right}, {"verdict"}},
      {{{"id=[a](http://b)", tone::plain, true}, {"1.50 us"}, {"regression", tone::bad}},
       {{"id=long-name", tone::plain, true}, {"12 GB/s"}, {"ok", tone::good}}}});
  s.blocks.emplace_back(
      document::notes{{{"regression", "id=[a](http://b): worse", tone::bad}}, true});
  d.sections.push_back(s);
  document::section folded;
  folded.heading = "nothing to see";
  folded.folded = true;
  folded.blocks.emplace_back(document::paragraph{"# not a heading"});
  d.sections.push_back(folded);
  document::section lists;
  lists.blocks.emplace_back(document::list{"only in the baseline", {"s c m", "s <d> m"}});
  d.sections.push_back(lists);
  document::section closing;
  closing.blocks.emplace_back(document::paragraph{"1 regression", tone::bad});
  closing.blocks.emplace_back(document::verbatim{"export X=```y```"});
  d.sections.push_back(closing);
  return d;
}

}  // namespace

TEST_CASE("document: the terminal writer", "[document][golden]") {
  const auto text = document::to_text(every_block());
  pinbench::testing::check_golden("document.txt", text);
  // No line ends in blanks; colour only when asked for.
  CHECK(text.find(" \n") == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  const auto coloured = document::to_text(every_block(), true);
  CHECK(coloured.find("\x1b[31mregression\x1b[0m") != std::string::npos);
}

TEST_CASE("document: the Markdown writer", "[document][golden]") {
  const auto md = document::to_markdown(every_block());
  pinbench::testing::check_golden("document.md", md);
  // Identifiers in code spans, other text escaped, folded sections in <details>, verbatim text
  // fenced by more backticks than it holds.
  CHECK(md.find("| `id=[a](http://b)` |") != std::string::npos);
  CHECK(md.find("one run \\| no history") != std::string::npos);
  CHECK(md.find("<details><summary>nothing to see</summary>") != std::string::npos);
  CHECK(md.find("\n````\nexport X=```y```\n````\n") != std::string::npos);
}

TEST_CASE("document: the JUnit writer", "[document][golden]") {
  document::test_report r{"pinbench sample",
                          {{"suite <1>",
                            {{"a: m", document::test_outcome::failure, "regression",
                              "regression: worse\nby 20%", "base 1, current 2"},
                             {"b: m", document::test_outcome::skipped, "", "inconclusive", ""},
                             {"c: m", document::test_outcome::pass, "", "unchanged", ""}}}}};
  const auto xml = document::to_junit(r);
  pinbench::testing::check_golden("document_junit.xml", xml);
  CHECK(xml.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\"") != std::string::npos);
  CHECK(xml.find("message=\"regression: worse by 20%\"") != std::string::npos);
}
