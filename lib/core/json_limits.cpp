// The nesting check runs over the raw text: nlohmann's parser itself is iterative, but the
// values it builds are copied, compared and dumped recursively.
#include "core/json_limits.hpp"

#include "core/error.hpp"

namespace pinbench {

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

}  // namespace pinbench
