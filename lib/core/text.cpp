#include "core/text.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace pinbench {

std::string_view trim(std::string_view s) noexcept {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const auto m = closest_match(word, candidates);
  return m.empty() ? std::string{} : " (did you mean \"" + m + "\"?)";
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
    out += "\"" + items[i] + "\"";
  }
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') break;
        out += ch;
    }
  }
  return out;
}

namespace {

bool ascii_alnum(char ch) noexcept {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

}  // namespace

std::string markdown_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    switch (ch) {
      case '|':
        out += "\\|";
        break;
      case '<':
        out += "&lt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      case '\\':
      case '`':
      case '[':
      case ']':
      case '*':
      case '~':
        out += '\\';
        out += ch;
        break;
      case '_': {
        // Inside a word (num_workers) an underscore never makes emphasis: left as it is.
        const bool inside =
            i > 0 && i + 1 < text.size() && ascii_alnum(text[i - 1]) && ascii_alnum(text[i + 1]);
        if (!inside) out += '\\';
        out += ch;
        break;
      }
      default:
        out += ch;
    }
  }
  return out;
}

std::string markdown_line(std::string_view text) {
  text = trim(text);  // four leading blanks would make a code block
  std::string out = markdown_cell(text);
  if (out.empty()) return out;
  // A list item numbered "1." or "1)": the punctuation after the digits.
  std::size_t digits = 0;
  while (digits < out.size() && out[digits] >= '0' && out[digits] <= '9') ++digits;
  if (digits > 0 && digits < out.size() && (out[digits] == '.' || out[digits] == ')'))
    out.insert(digits, "\\");
  else if (out.front() == '#' || out.front() == '>' || out.front() == '-' || out.front() == '+' ||
           out.front() == '=')
    out.insert(0, "\\");
  return out;
}

std::string markdown_code(std::string_view text, bool in_table) {
  std::size_t longest = 0, run = 0;
  std::string body;
  body.reserve(text.size());
  for (const char ch : text) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (ch == '\n' || ch == '\r')
      body += ' ';
    else if (ch == '|' && in_table)
      body += "\\|";
    else
      body += ch;
  }
  // A span that starts or ends with a backtick needs a space between it and the fence; one that
  // starts and ends with a space loses one of each unless padded.
  const bool all_blank = body.find_first_not_of(' ') == std::string::npos;
  const bool pad = body.empty() || body.front() == '`' || body.back() == '`' ||
                   (!all_blank && body.front() == ' ' && body.back() == ' ');
  const std::string fence(longest + 1, '`');
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string paint(std::string_view text, std::string_view code, bool color) {
  if (!color) return std::string(text);
  return std::string(code) + std::string(text) + std::string(ansi::reset);
}

std::size_t display_width(std::string_view s) noexcept {
  // Count every byte that does not continue a UTF-8 sequence.
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& ch : out)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  return out;
}

std::string truncate(std::string_view s, std::size_t limit) {
  if (display_width(s) <= limit) return std::string(s);
  if (limit == 0) return {};
  std::size_t kept = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (kept == limit - 1) break;
      ++kept;
    }
  }
  return std::string(s.substr(0, i)) + "\u2026";
}

std::string exact_number(double v) {
  // fmt's shortest representation reads back to the same double.
  return std::isfinite(v) ? fmt::format("{}", v) : std::string();
}

bool glob_match(const std::string& pattern, const std::string& text) noexcept {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string glob_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace pinbench
