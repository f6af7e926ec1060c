// A fresh folder under the temporary directory for one test, removed with its contents at scope
// exit. Named after the tag and the process, so that tests running at once never share one.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace pinbench::testing {

class scratch_dir {
 public:
  explicit scratch_dir(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("pinbench-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace pinbench::testing
