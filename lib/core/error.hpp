// The exception hierarchy of pinbench; main maps each kind to one exit code and one line.
#pragma once

#include <stdexcept>
#include <string>

namespace pinbench {

/// Exit codes, one meaning each (docs/reliability.md, "Exit codes").
enum exit_code : int {
  exit_ok = 0,
  exit_case_failed = 1,   ///< a case failed (run) or a gated regression (compare)
  exit_input = 2,         ///< usage or input error: nothing was run
  exit_environment = 3,   ///< backend unavailable, incomparable results, a result not saved
  exit_interrupted = 130  ///< SIGINT (SIGTERM 143, SIGHUP 129): what was measured is kept
};

/// Base of every error pinbench throws on purpose.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input: a scenario, an override, a trace, a command-line value. Exit 2.
/// what() is the complete one-line message: "FILE: PATH: MESSAGE" (parts omitted when empty).
class input_error : public error {
 public:
  input_error(std::string file, std::string json_path, std::string message);
  explicit input_error(std::string message) : input_error({}, {}, std::move(message)) {}
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] const std::string& json_path() const noexcept { return json_path_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

 private:
  std::string file_, json_path_, message_;
};

/// The environment cannot do what was asked (no CUDA device for --backend cuda). Exit 3.
class environment_error : public error {
 public:
  using error::error;
};

/// What was measured or computed could not be saved (disk full, a file-size limit, a file the
/// user may not write). Exit 3, in every command.
class save_error : public environment_error {
 public:
  using environment_error::environment_error;
};

/// A device (or host-backend capacity) allocation failed. Inside a workload this is a result.
class out_of_memory : public error {
 public:
  using error::error;
};

/// Pinned (page-locked) host memory could not be had.
class pinned_memory_error : public error {
 public:
  using error::error;
};

/// A backend call failed for another reason (a CUDA error code, a broken invariant).
class device_error : public error {
 public:
  using error::error;
};

/// The device lacks what a case needs (cudaHostRegister refused by the platform, a second
/// GPU): the case is recorded as skipped with this reason, neither passed nor failed.
class unsupported_error : public error {
 public:
  using error::error;
};

/// Work stopped on request: Ctrl-C, SIGTERM or SIGHUP (core/interrupt.hpp).
class interrupted_error : public error {
 public:
  interrupted_error() : error("interrupted") {}
};

}  // namespace pinbench
