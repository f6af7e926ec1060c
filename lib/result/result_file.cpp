// Reading a result file from disk: the file's problems become input errors that name it.
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"
#include "result/result_io.hpp"

namespace pinbench::result {

run_result read_result_file(const std::string& path) {
  return from_json(read_json_document(path, max_result_file_bytes), path);
}

}  // namespace pinbench::result
