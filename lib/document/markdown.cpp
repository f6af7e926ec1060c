// The Markdown writer of a document; see document.hpp. Every text from the inputs goes through
// core/text.hpp's escaping, the one home of it.
#include <algorithm>
#include <string>
#include <string_view>

#include "core/text.hpp"
#include "document/document.hpp"

namespace pinbench::document {

namespace {

// In bold: a table cell that is bad news or marked (the chosen trial); a line of prose with any
// tone (an outcome).
std::string bold(const std::string& escaped) {
  return escaped.empty() ? escaped : "**" + escaped + "**";
}

std::string table_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) line += " " + c + " |";
  return line + "\n";
}

void write(std::string& out, const table& t) {
  std::vector<std::string> headers, rule;
  headers.reserve(t.columns.size());
  rule.reserve(t.columns.size());
  for (const auto& c : t.columns) {
    headers.push_back(markdown_cell(c.header));
    rule.push_back(c.alignment == align::right ? "---:" : ":---");
  }
  out += table_row(headers) + table_row(rule);
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    cells.reserve(row.size());
    for (const auto& c : row)
      cells.push_back(c.code && !c.text.empty()                       ? markdown_code(c.text, true)
                      : c.mark == tone::bad || c.mark == tone::strong ? bold(markdown_cell(c.text))
                                                                      : markdown_cell(c.text));
    out += table_row(cells);
  }
}

// Blocks are separated by a blank line, as Markdown needs between a paragraph and a table.
void write(std::string& out, const block& b) {
  out += "\n";
  if (const auto* p = std::get_if<paragraph>(&b)) {
    out += (p->mark == tone::plain ? markdown_line(p->text) : bold(markdown_cell(p->text))) + "\n";
  } else if (const auto* f = std::get_if<fields>(&b)) {
    for (const auto& [key, value] : f->items)
      out += "- **" + markdown_cell(key) + ":** " + markdown_cell(value) + "\n";
  } else if (const auto* n = std::get_if<notes>(&b)) {
    for (const auto& item : n->items)
      out += "- " + bold(markdown_cell(item.label) + ":") + " " + markdown_cell(item.text) + "\n";
  } else if (const auto* t = std::get_if<table>(&b)) {
    write(out, *t);
  } else if (const auto* l = std::get_if<list>(&b)) {
    out += "**" + markdown_cell(l->title) + ":**\n\n";
    for (const auto& item : l->items) out += "- " + markdown_cell(item) + "\n";
  } else if (const auto* v = std::get_if<verbatim>(&b)) {
    // A fence longer than any run of backticks inside.
    std::size_t run = 0, longest = 0;
    for (char ch : v->text) longest = std::max(longest, run = ch == '`' ? run + 1 : 0);
    const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
    out += fence + "\n" + v->text + "\n" + fence + "\n";
  }
}

}  // namespace

std::string to_markdown(const document& d) {
  std::string out;
  if (!d.title.empty()) out += "## " + markdown_cell(d.title) + "\n";
  for (const auto& b : d.preamble) write(out, b);
  for (const auto& s : d.sections) {
    if (s.folded) {
      out += "\n<details><summary>" + xml_escape(s.heading) + "</summary>\n";
      for (const auto& b : s.blocks) write(out, b);
      out += "\n</details>\n";
      continue;
    }
    if (!s.heading.empty()) out += "\n### " + markdown_cell(s.heading) + "\n";
    for (const auto& b : s.blocks) write(out, b);
  }
  return out;
}

}  // namespace pinbench::document
