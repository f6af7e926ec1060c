// Markdown escaping (core/text.hpp), the one home for it: text from inputs shows literally where
// GitHub renders Markdown, in table cells, at the start of a line and in code spans.
#include <catch2/catch.hpp>

#include "core/text.hpp"

using pinbench::markdown_cell;
using pinbench::markdown_code;
using pinbench::markdown_line;

TEST_CASE("markdown_cell: links, images, HTML, code and emphasis show as text",
          "[core][text][markdown]") {
  CHECK(markdown_cell("[click](http://x)") == R"(\[click\](http://x))");
  CHECK(markdown_cell("![x](http://y)") == R"(!\[x\](http://y))");
  CHECK(markdown_cell("[a][ref]") == R"(\[a\]\[ref\])");
  CHECK(markdown_cell("<http://x> <img src=x>") == "&lt;http://x> &lt;img src=x>");
  CHECK(markdown_cell("`code`") == R"(\`code\`)");
  CHECK(markdown_cell("*bold* ~~gone~~ _it_") == R"(\*bold\* \~\~gone\~\~ \_it\_)");
  CHECK(markdown_cell("&#91;x&#93;(y)") == "&amp;#91;x&amp;#93;(y)");
  CHECK(markdown_cell(R"(\[x](y))") == R"(\\\[x\](y))");  // a backslash cannot undo an escape
  // What a table needs, as before: a pipe escaped, a newline a space.
  CHECK(markdown_cell("a|b\nc\rd") == R"(a\|b c d)");
  // What needs nothing stays readable: words joined by underscores, numbers, parentheses.
  CHECK(markdown_cell("num_workers=4 (97% busy), -20.8% !") ==
        "num_workers=4 (97% busy), -20.8% !");
  CHECK(markdown_cell("_x") == R"(\_x)");
  CHECK(markdown_cell("x_") == R"(x\_)");
  CHECK(markdown_cell("") == "");
}

TEST_CASE("markdown_line: what would make a heading, a quote or a list is escaped",
          "[core][text][markdown]") {
  CHECK(markdown_line("# big") == R"(\# big)");
  CHECK(markdown_line("> quoted") == R"(\> quoted)");
  CHECK(markdown_line("- item") == R"(\- item)");
  CHECK(markdown_line("+ item") == R"(\+ item)");
  CHECK(markdown_line("===") == R"(\===)");
  CHECK(markdown_line("1. first") == R"(1\. first)");
  CHECK(markdown_line("12) twelfth") == R"(12\) twelfth)");
  CHECK(markdown_line("        indented code") == "indented code");
  CHECK(markdown_line("pinned vs [pageable](x)") == R"(pinned vs \[pageable\](x))");
  CHECK(markdown_line("2 GiB") == "2 GiB");
  CHECK(markdown_line("") == "");
}

TEST_CASE("markdown_code: a code span that holds any text", "[core][text][markdown]") {
  CHECK(markdown_code("memory=pinned", true) == "`memory=pinned`");
  CHECK(markdown_code("[click](http://x)", true) == "`[click](http://x)`");
  CHECK(markdown_code("a`b", false) == "``a`b``");
  CHECK(markdown_code("a``b`", false) == "``` a``b` ```");
  CHECK(markdown_code("`x", false) == "`` `x ``");
  CHECK(markdown_code(" x ", false) == "`  x  `");
  CHECK(markdown_code("<b>&amp;", false) == "`<b>&amp;`");  // no entity or tag in a span
  CHECK(markdown_code("a|b", true) == R"(`a\|b`)");
  CHECK(markdown_code("a|b", false) == "`a|b`");
  CHECK(markdown_code("a\nb", false) == "`a b`");
  CHECK(markdown_code("", false) == "`  `");
}
