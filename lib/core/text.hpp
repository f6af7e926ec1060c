// Small text helpers: "did you mean" suggestions, escaping for XML/HTML and Markdown tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pinbench {

/// `s` without leading and trailing blanks (space, tab, CR, LF).
[[nodiscard]] std::string_view trim(std::string_view s) noexcept;

/// Levenshtein edit distance.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a plausible misspelling
/// (distance <= max(2, len/3)); empty otherwise.
[[nodiscard]] std::string closest_match(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// ` (did you mean "x"?)` or empty.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates);

/// "a, b, c" / `"a", "b" or "c"` for messages.
[[nodiscard]] std::string quoted_list(const std::vector<std::string>& items);

/// `text` safe in XML/HTML text and in quoted attributes: &, <, >, " and ' escaped, and the
/// control characters XML 1.0 forbids (all below 0x20 but tab, LF and CR) dropped.
[[nodiscard]] std::string xml_escape(std::string_view text);

/// The one home of Markdown escaping: text that comes from inputs (case ids, params, messages,
/// names, descriptions) shown literally where GitHub renders Markdown (a PR comment, a step
/// summary).
///
/// `text` as Markdown inline text, in a table cell or after other text on a line: a pipe would
/// end the cell and a newline the table (a space instead); `[` and `]` could make a link or an
/// image, `<` an autolink or an HTML tag, a backtick a code span, `*`, `~` and `_` at a word's
/// edge emphasis or strikethrough, `&` an entity, and a backslash would escape what follows.
/// (A bare URL is still linked by GitHub, to the address it shows.)
[[nodiscard]] std::string markdown_cell(std::string_view text);

/// markdown_cell() for text that starts a line: also what would make the line a heading (`#`), a
/// quote (`>`), a list item (`-`, `+`, `1.`) or a rule, or (leading blanks) a code block.
[[nodiscard]] std::string markdown_line(std::string_view text);

/// `text` as a Markdown code span, its backticks included, showing it literally: fenced by more
/// backticks than any run inside it, padded where it starts or ends with one. `in_table`: a pipe
/// is escaped, as a table cell needs (GitHub removes the backslash before the span is read).
[[nodiscard]] std::string markdown_code(std::string_view text, bool in_table);

/// Whether `text` matches the shell pattern `pattern` (fnmatch: `*`, `?`, `[...]`, a backslash
/// quoting the next character; `*` also matches `/`). A pattern without those is an exact name.
[[nodiscard]] bool glob_match(const std::string& pattern, const std::string& text) noexcept;

/// `text` as a pattern that glob_match() matches against `text` alone: `*`, `?`, `[` and `\`
/// quoted with a backslash.
[[nodiscard]] std::string glob_quote(std::string_view text);

/// ANSI terminal styles for tables shown on a terminal.
/// Columns a string takes in a terminal: UTF-8 code points (pinbench prints no wide glyphs).
[[nodiscard]] std::size_t display_width(std::string_view s) noexcept;

/// `text` on one line: line breaks and tabs become spaces (a reason in a table, a JUnit
/// attribute).
[[nodiscard]] std::string one_line(std::string_view text);

/// `s` cut to at most `limit` code points, ending in "…" when cut.
[[nodiscard]] std::string truncate(std::string_view s, std::size_t limit);

/// A number in its shortest form that reads back to the same double; "" when not finite.
[[nodiscard]] std::string exact_number(double v);

namespace ansi {
inline constexpr std::string_view bold = "\x1b[1m";
inline constexpr std::string_view red = "\x1b[31m";
inline constexpr std::string_view green = "\x1b[32m";
inline constexpr std::string_view yellow = "\x1b[33m";
inline constexpr std::string_view reset = "\x1b[0m";
}  // namespace ansi

/// `text` in the ANSI style `code` when `color`, else unchanged.
[[nodiscard]] std::string paint(std::string_view text, std::string_view code, bool color);

}  // namespace pinbench
