// Reading a result file from disk: the file's problems become input errors that name it.
#include <string>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_limits.hpp"
#include "result/result_io.hpp"

namespace pinbench::result {

run_result read_result_file(const std::string& path) {
  const std::string text = read_file(path, max_result_file_bytes, pipes::read);
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
  return from_json(doc, path);
}

}  // namespace pinbench::result
