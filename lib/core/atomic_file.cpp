#include "core/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "core/error.hpp"

namespace pinbench {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::filesystem::path parent_or_dot(const std::filesystem::path& p) {
  auto dir = p.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  if (path == "-") {
    if (!write_all(STDOUT_FILENO, content)) throw error("stdout: write failed: " + errno_text(errno));
    return;
  }
  const auto dir = parent_or_dot(path);
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw error(path.string() + ": cannot create a temporary file: " + errno_text(errno));
  int err = 0;
  if (!write_all(fd, content)) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (err == 0) ::fchmod(fd, 0644);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmpl.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmpl.c_str());
    throw error(path.string() + ": write failed: " + errno_text(err));
  }
}

void check_writable(const std::filesystem::path& path) {
  if (path == "-") return;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw input_error(path.string(), {}, "is a directory, expected a file path");
  const auto dir = parent_or_dot(path);
  if (!std::filesystem::is_directory(dir, ec))
    throw input_error(path.string(), {}, "cannot write: directory " + dir.string() + " does not exist");
  std::string tmpl = (dir / ".pinbench-write-check.XXXXXX").string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
  ::close(fd);
  ::unlink(tmpl.c_str());
  if (std::filesystem::exists(path, ec) && ::access(path.c_str(), W_OK) != 0 &&
      ::access(dir.c_str(), W_OK) != 0)
    throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
}

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw input_error(path.string(), {}, "is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path.string(), {}, std::string("cannot read: ") + errno_text(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace pinbench
