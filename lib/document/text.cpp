// The terminal writer of a document; see document.hpp.
#include <algorithm>
#include <string>
#include <string_view>

#include "core/text.hpp"
#include "document/document.hpp"

namespace pinbench::document {

namespace {

std::string_view style_of(tone t) {
  switch (t) {
    case tone::strong:
      return ansi::bold;
    case tone::good:
      return ansi::green;
    case tone::bad:
      return ansi::red;
    case tone::caution:
      return ansi::yellow;
    case tone::plain:
      return {};
  }
  return {};
}

std::string painted(std::string_view text, tone t, bool color) {
  return paint(text, style_of(t), color);
}

std::string without_trailing_blanks(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// Every cell padded to its column's widest, numbers to the right; the last column left unpadded
// when it aligns left, so that no line ends in blanks. Colour goes on after measuring: escape
// codes take no columns on screen.
void draw(std::string& out, const table& t, bool color) {
  std::vector<std::size_t> widths;
  for (const auto& c : t.columns) widths.push_back(display_width(c.header));
  for (const auto& row : t.rows)
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i].text));
  const auto line = [&](const std::vector<cell>& cells, bool header) {
    std::string text;
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      if (i > 0) text += "  ";
      const auto w = display_width(cells[i].text);
      const std::string fill(widths[i] > w ? widths[i] - w : 0, ' ');
      const bool last = i + 1 == cells.size();
      const std::string shown =
          header ? cells[i].text : painted(cells[i].text, cells[i].mark, color);
      if (t.columns[i].alignment == align::right)
        text += fill + shown;
      else
        text += last ? shown : shown + fill;
    }
    text = without_trailing_blanks(std::move(text));
    return header ? painted(text, tone::strong, color) : text;
  };
  std::vector<cell> headers;
  for (const auto& c : t.columns) headers.emplace_back(c.header);
  out += line(headers, true) + "\n";
  for (const auto& row : t.rows) out += line(row, false) + "\n";
}

void draw(std::string& out, const block& b, bool color) {
  if (const auto* p = std::get_if<paragraph>(&b)) {
    out += painted(p->text, p->mark, color) + "\n";
  } else if (const auto* f = std::get_if<fields>(&b)) {
    std::size_t key_width = 0;
    for (const auto& [key, value] : f->items)
      key_width = std::max(key_width, display_width(key) + 1);
    for (const auto& [key, value] : f->items) {
      const std::string k = key + ":";
      out += k + std::string(key_width + 1 - display_width(k), ' ') + value + "\n";
    }
  } else if (const auto* n = std::get_if<notes>(&b)) {
    for (const auto& item : n->items)
      out += (n->indented ? "  " : "") + painted(item.label + ": ", item.mark, color) + item.text +
             "\n";
  } else if (const auto* t = std::get_if<table>(&b)) {
    draw(out, *t, color);
  } else if (const auto* l = std::get_if<list>(&b)) {
    out += painted(l->title + ":", tone::strong, color) + "\n";
    for (const auto& item : l->items) out += "  " + item + "\n";
  } else if (const auto* v = std::get_if<verbatim>(&b)) {
    out += v->text + "\n";
  }
}

}  // namespace

std::string to_text(const document& d, bool color) {
  std::string out;
  if (!d.title.empty()) out += painted(d.title, tone::strong, color) + "\n";
  for (const auto& b : d.preamble) draw(out, b, color);
  for (const auto& s : d.sections) {
    out += "\n";
    if (!s.heading.empty()) out += painted("== " + s.heading, tone::strong, color) + "\n";
    for (const auto& b : s.blocks) draw(out, b, color);
  }
  return out;
}

}  // namespace pinbench::document
