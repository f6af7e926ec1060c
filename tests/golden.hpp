// Golden-file comparison for tests: tests/data/golden/NAME holds the expected text exactly.
// PINBENCH_UPDATE_GOLDEN=1 rewrites the file from the actual output instead of comparing.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "test_paths.hpp"

namespace pinbench::testing {

inline std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path(pinbench::testing::source_dir()) / "tests" / "data" / "golden" /
         name;
}

inline void check_golden(const std::string& name, const std::string& actual) {
  const auto path = golden_path(name);
  const char* update = std::getenv("PINBENCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path.string());
  }
  std::ifstream in(path, std::ios::binary);
  INFO("golden file " << path.string() << " (PINBENCH_UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE(in.good());
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(actual == expected.str());
}

}  // namespace pinbench::testing
