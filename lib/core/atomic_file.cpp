#include "core/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <string>
#include <unistd.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace pinbench {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// What a file that is not regular is, for messages: "a FIFO", "a character device".
std::string file_type_text(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a file of an unknown type";
}

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

std::string read_file(const std::filesystem::path& path, std::uint64_t max_bytes, pipes fifo) {
  const auto fail = [&](const std::string& why) { return input_error(path.string(), {}, why); };
  const auto refuse_type = [&](mode_t mode) {
    if (S_ISDIR(mode)) return fail("is a directory, expected a file");
    return fail("is " + file_type_text(mode) + ", expected a regular file");
  };
  const auto accepted = [&](mode_t mode) {
    return S_ISREG(mode) || (S_ISFIFO(mode) && fifo == pipes::read);
  };
  // The type first, from stat: open() on a FIFO would wait for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw fail("cannot read: " + errno_text(errno));
  if (!accepted(st.st_mode)) throw refuse_type(st.st_mode);
  // O_NONBLOCK: a FIFO without a writer opens at once (and then reads as empty).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw fail("cannot read: " + errno_text(errno));
  struct closer {
    int handle;
    ~closer() { ::close(handle); }
  } const close_at_end{fd};
  // What was opened, which may not be what was looked at (the path changed in between).
  if (::fstat(fd, &st) != 0) throw fail("cannot read: " + errno_text(errno));
  if (!accepted(st.st_mode)) throw refuse_type(st.st_mode);
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // a pipe's writer may be slow: wait for it
  const auto too_large = [&] {
    return fail("too large: more than " + format_bytes(max_bytes) +
                ", the most pinbench reads of this kind of file");
  };
  // The size up front when the file has one; a pipe is read in chunks up to the limit.
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large();
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("cannot read: " + errno_text(errno));
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();
    out.append(chunk, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace pinbench
