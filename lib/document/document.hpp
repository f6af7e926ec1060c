// A report as a format-neutral document: what every command shows (run reports, compare,
// check, tune) is built once as sections of tables, notes and lines, and one writer per format
// renders any document: the terminal (to_text), Markdown (to_markdown). Test verdicts have a
// model of their own, rendered as JUnit XML (test_report, to_junit). A new section is added to
// the document a command builds, never to a writer.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pinbench::document {

/// How a piece of text stands out: in colour on a terminal, in bold in Markdown (bad, strong).
enum class tone { plain, strong, good, bad, caution };

enum class align { left, right };

/// A table cell: its text as people read it, its tone, and whether it is an identifier (a case
/// id or a param), shown literally (a code span in Markdown).
struct cell {
  std::string text;
  tone mark = tone::plain;
  bool code = false;
  cell() = default;
  cell(std::string t, tone m = tone::plain, bool c = false)  // NOLINT(google-explicit-constructor)
      : text(std::move(t)), mark(m), code(c) {}
  cell(const char* t) : text(t) {}  // NOLINT(google-explicit-constructor)
};

struct column {
  std::string header;
  align alignment = align::left;  ///< numbers right, text left (the header aligns alike)
};

struct table {
  std::vector<column> columns;
  std::vector<std::vector<cell>> rows;  ///< each as many cells as there are columns
};

/// One "label: text" line: a verdict, a warning, a reason. The label takes the tone.
struct note {
  std::string label;
  std::string text;
  tone mark = tone::plain;
};

/// Notes one under the other; `indented`: they belong to the table above (its rows' reasons).
struct notes {
  std::vector<note> items;
  bool indented = false;
};

/// "key: value" lines, keys aligned: what a document is about (a comparison's two sides).
struct fields {
  std::vector<std::pair<std::string, std::string>> items;
};

/// A line of prose: a summary, an outcome.
struct paragraph {
  std::string text;
  tone mark = tone::plain;
};

/// Text kept exactly as it is, to be pasted (tune's answer): a code block in Markdown.
struct verbatim {
  std::string text;
};

/// A titled list ("only in the baseline:" and its entries).
struct list {
  std::string title;
  std::vector<std::string> items;
};

using block = std::variant<paragraph, fields, notes, table, list, verbatim>;

struct section {
  std::string heading;  ///< "" for a section with none (the closing lines)
  std::vector<block> blocks;
  /// Reference material (every row of a long comparison): folded where the format can fold
  /// (Markdown's <details>), shown in full on a terminal.
  bool folded = false;
};

struct document {
  std::string title;
  std::vector<block> preamble;  ///< right under the title: what it is about, its warnings
  std::vector<section> sections;
};

/// The terminal: the title, the preamble, then each section after a blank line, headed
/// "== HEADING"; tables padded to their widest cell (no line ends in blanks). `color`: ANSI
/// styles for tones.
[[nodiscard]] std::string to_text(const document& d, bool color = false);

/// GitHub-flavoured Markdown, for a step summary or a PR comment: every text from the inputs
/// escaped (core/text.hpp), tables as pipe tables, folded sections in <details>.
[[nodiscard]] std::string to_markdown(const document& d);

/// Verdicts as tests, for CI systems that show JUnit XML natively.
enum class test_outcome { pass, failure, skipped };

struct test_case {
  std::string name;
  test_outcome outcome = test_outcome::pass;
  std::string kind;     ///< failure: its type ("regression", "outside")
  std::string message;  ///< failure and skipped: one line; pass: what is shown as its output
  std::string details;  ///< failure: the figures behind it
};

struct test_suite {
  std::string name;
  std::vector<test_case> cases;
};

struct test_report {
  std::string name;  ///< "pinbench compare", "pinbench check"
  std::vector<test_suite> suites;
};

/// JUnit XML: <testsuites> with counts, one <testsuite> per suite, one <testcase> each
/// (classname "pinbench.SUITE"); attributes on one line, escaped.
[[nodiscard]] std::string to_junit(const test_report& r);

}  // namespace pinbench::document
