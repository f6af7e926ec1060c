#include "test_paths.hpp"

namespace pinbench::testing {

const std::string& source_dir() {
  static const std::string dir = PINBENCH_SOURCE_DIR;
  return dir;
}

const std::string& pinbench_exe() {
  static const std::string exe = PINBENCH_EXE;
  return exe;
}

const std::string& fake_nvml_library() {
  static const std::string path = PINBENCH_FAKE_NVML;
  return path;
}

const std::string& fake_nvml_no_power_library() {
  static const std::string path = PINBENCH_FAKE_NVML_NO_POWER;
  return path;
}

}  // namespace pinbench::testing
