#include "core/error.hpp"

namespace pinbench {

namespace {
std::string join_message(const std::string& file, const std::string& path, const std::string& msg) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!path.empty()) out += path + ": ";
  out += msg;
  return out;
}
}  // namespace

input_error::input_error(std::string file, std::string json_path, std::string message)
    : error(join_message(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

}  // namespace pinbench
