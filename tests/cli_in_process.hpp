// Runs the very CLI in this test's process (app::run_cli), stdout and stderr sent to files for
// the call: what a test needs when it reads the process's own state afterwards (a counter, a
// registered toy kind) rather than a child's.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace pinbench::testing {

struct cli_outcome {
  int code = -1;
  std::string out, err;
};

/// `pinbench ARGS` through app::run_cli; `dir` holds the two capture files.
inline cli_outcome run_cli_in_process(std::vector<std::string> args,
                                      const std::filesystem::path& dir) {
  const auto read_all = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  args.insert(args.begin(), "pinbench");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  const auto out_path = dir / "stdout.txt", err_path = dir / "stderr.txt";
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE((saved_out >= 0 && saved_err >= 0 && out_fd >= 0 && err_fd >= 0));
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  cli_outcome o;
  o.code = app::run_cli(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  for (int fd : {saved_out, saved_err, out_fd, err_fd}) ::close(fd);
  o.out = read_all(out_path);
  o.err = read_all(err_path);
  return o;
}

}  // namespace pinbench::testing
