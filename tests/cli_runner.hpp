// Runs the built pinbench executable for end-to-end tests: exit code, stdout and stderr apart.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include "test_paths.hpp"

namespace pinbench::testing {

struct outcome {
  int code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// Runs `pinbench ARGS` (shell words) and captures its exit code, stdout and stderr.
inline outcome run_pinbench(const std::string& args) {
  const std::filesystem::path err_file = std::filesystem::temp_directory_path() /
                                         ("pinbench-cli-test.stderr." + std::to_string(::getpid()));
  const std::string cmd =
      pinbench::testing::pinbench_exe() + " " + args + " 2>" + err_file.string();
  outcome o;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  o.err.assign(std::istreambuf_iterator<char>(e), {});
  std::filesystem::remove(err_file);
  return o;
}

/// An empty directory of its own under the temp directory.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("pinbench-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace pinbench::testing
