#include "core/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <fstream>
#include <string>
#include <unistd.h>

#include "core/error.hpp"
#include "core/units.hpp"

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
  // A device or a pipe (/dev/stdout, /dev/null, a FIFO) is written in place: renaming a file
  // over it would replace the device node, not write to it.
  if (std::error_code ec; std::filesystem::exists(path, ec) &&
                          !std::filesystem::is_regular_file(path, ec)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw error(path.string() + ": cannot open: " + errno_text(errno));
    int err = write_all(fd, content) ? 0 : errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) throw error(path.string() + ": write failed: " + errno_text(err));
    return;
  }
  const auto dir = parent_or_dot(path);
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict for "literal" + std::string.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp.XXXXXX";
  std::string tmpl = (dir / name).string();
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
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    // A device or a pipe is written in place (see write_file_atomic).
    if (::access(path.c_str(), W_OK) != 0)
      throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
    return;
  }
  if (!std::filesystem::is_directory(dir, ec))
    throw input_error(path.string(), {},
                      "cannot write: " + dir.string() +
                          (std::filesystem::exists(dir, ec) ? " is not a directory"
                                                            : " does not exist"));
  std::string tmpl = (dir / ".pinbench-write-check.XXXXXX").string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
  ::close(fd);
  ::unlink(tmpl.c_str());
  if (std::filesystem::exists(path, ec) && ::access(path.c_str(), W_OK) != 0 &&
      ::access(dir.c_str(), W_OK) != 0)
    throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
}

std::string read_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw input_error(path.string(), {}, "is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path.string(), {}, std::string("cannot read: ") + errno_text(errno));
  auto too_large = [&] {
    return input_error(path.string(), {},
                       "too large: more than " + format_bytes(max_bytes) +
                           ", the most pinbench reads of this kind of file");
  };
  // The size up front when the file has one; a pipe is read in chunks up to the limit.
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > max_bytes)
    throw too_large();
  std::string out;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    if (out.size() + n > max_bytes) throw too_large();
    out.append(chunk, n);
  }
  if (in.bad()) throw input_error(path.string(), {}, std::string("cannot read: ") + errno_text(errno));
  return out;
}

}  // namespace pinbench
