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

}  // namespace pinbench::testing
