// The nesting check runs over the raw text: nlohmann's parser itself is iterative, but the
// values it builds are copied, compared and dumped recursively.
#include "core/json_limits.hpp"

#include <memory>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace pinbench {

namespace {

// Line and column (characters, not bytes of UTF-8 sequences) of text[at], both from 1.
std::string position_of(std::string_view text, std::size_t at) {
  std::size_t line = 1, column = 1;
  for (std::size_t k = 0; k < at && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[k]) & 0xC0U) != 0x80U) {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// A key as JSON writes it, control characters escaped: safe in a one-line message.
std::string quoted_key(const std::string& key) {
  return nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One open object or array of the document being scanned. Frames are reused as the scan goes
// in and out of nesting, so that their containers keep their capacity.
struct open_value {
  bool object = false;
  bool want_key = false;  // object: the next string is a key
  std::size_t index = 0;  // array: the current item
  std::string_view key;   // object: the current member's key
  // Keys seen: views into the text, or into `decoded` for keys written with escapes. A few
  // keys are searched in order; past `few`, a hash set takes over.
  std::vector<std::string_view> keys;
  std::unordered_set<std::string_view> many;
  std::vector<std::unique_ptr<std::string>> decoded;

  void reset(bool is_object) {
    object = is_object;
    want_key = is_object;
    index = 0;
    key = {};
    keys.clear();
    many.clear();
    decoded.clear();
  }

  // Adds `k`; false when it was there already.
  bool add(std::string_view k) {
    constexpr std::size_t few = 16;
    if (!many.empty()) return many.insert(k).second;
    for (const auto& seen : keys)
      if (seen == k) return false;
    keys.push_back(k);
    if (keys.size() > few) many.insert(keys.begin(), keys.end());
    return true;
  }
};

// The path of the current member or item of the innermost of `depth` open values, as
// messages write paths ("matrix.bytes", "tags[1]"): built only for a message.
std::string path_of(const std::vector<open_value>& stack, std::size_t depth) {
  std::string path;
  for (std::size_t d = 0; d < depth; ++d) {
    const open_value& v = stack[d];
    if (!v.object) {
      path += "[" + std::to_string(v.index) + "]";
      continue;
    }
    const std::string key = quoted_key(std::string(v.key));
    if (!path.empty()) path += '.';
    path += key.substr(1, key.size() - 2);
  }
  return path;
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& file, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth <= max_depth) continue;
      std::size_t line = 1, column = 1;
      for (std::size_t k = 0; k < i; ++k) {
        if (text[k] == '\n') {
          ++line;
          column = 1;
        } else if ((static_cast<unsigned char>(text[k]) & 0xC0U) != 0x80U) {
          ++column;  // characters, not the bytes of UTF-8 sequences
        }
      }
      throw input_error(file, {},
                        "line " + std::to_string(line) + ", column " + std::to_string(column) +
                            ": JSON nests deeper than " + std::to_string(max_depth) +
                            " levels of arrays and objects");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

void check_duplicate_keys(std::string_view text, const std::string& file) {
  std::vector<open_value> stack;  // grows to the deepest nesting, then is reused
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t start = i;
      bool escaped = false;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') {
          escaped = true;
          ++i;  // the escaped character cannot end the string
        }
      }
      if (depth == 0) continue;
      open_value& top = stack[depth - 1];
      if (!top.object || !top.want_key) continue;
      std::string_view key = text.substr(start + 1, i - start - 1);
      if (escaped) {  // "\u0061" is "a": keys are compared as decoded
        top.decoded.push_back(std::make_unique<std::string>(
            nlohmann::json::parse(text.substr(start, i - start + 1)).get<std::string>()));
        key = *top.decoded.back();
      }
      top.key = key;
      top.want_key = false;
      if (!top.add(key))
        throw input_error(file, path_of(stack, depth),
                          "duplicate key " + quoted_key(std::string(key)) + " (" +
                              position_of(text, start) + ")");
    } else if (c == '{' || c == '[') {
      if (stack.size() == depth) stack.emplace_back();
      stack[depth].reset(c == '{');
      ++depth;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == ',' && depth > 0) {
      open_value& top = stack[depth - 1];
      if (top.object)
        top.want_key = true;
      else
        ++top.index;
    }
  }
}

nlohmann::ordered_json read_json_document(const std::string& path, std::uint64_t max_bytes) {
  const std::string text = read_file(path, max_bytes, pipes::read);
  check_json_depth(text, path);
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ...", or
    // out_of_range.406 for a number beyond a double's range ("1e400"). The message quotes the
    // last token read, which can be as long as the file: it is cut.
    std::string reason = e.what();
    if (const auto at = reason.find("] "); at != std::string::npos) reason.erase(0, at + 2);
    for (char& ch : reason)
      if (ch == '\n' || ch == '\r') ch = ' ';
    if (reason.size() > 160) reason = reason.substr(0, 157) + "...";
    throw input_error(path, {}, "not valid JSON: " + reason);
  }
  check_duplicate_keys(text, path);
  return doc;
}

}  // namespace pinbench
