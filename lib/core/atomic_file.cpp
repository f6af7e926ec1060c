#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <atomic>
#include <vector>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace pinbench {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

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

// Creates a new file in `dir` named after `base` (".base.tmp.PID.N"), mode 0666 less the
// umask, as any new file of this user would be. Returns the descriptor (-1 with errno set).
int create_beside(const std::filesystem::path& dir, const std::string& base, std::string& name) {
  static std::atomic<std::uint64_t> counter{0};
  for (int attempt = 0; attempt < 64; ++attempt) {
    name = (dir / fmt::format(".{}.tmp.{}.{}", base, ::getpid(),
                              counter.fetch_add(1) ^ static_cast<std::uint64_t>(now_ns())))
               .string();
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// Why an existing regular file is not replaced ("" when it may be): the user may not write
// it, or nobody may (mode without a write bit: a file kept read-only on purpose, which even
// root's pinbench leaves alone).
std::string why_not_replaceable(const std::filesystem::path& path, const struct stat& st) {
  if ((st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0)
    return fmt::format("read-only (mode {:04o}): pinbench does not replace a file it may not write",
                       st.st_mode & 07777);
  return {};
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  if (path == "-") {
    if (!write_all(STDOUT_FILENO, content))
      throw save_error("stdout: write failed: " + errno_text(errno));
    return;
  }
  struct stat target {};
  const bool exists = ::stat(path.c_str(), &target) == 0;
  // A device or a pipe (/dev/stdout, /dev/null, a FIFO) is written in place: renaming a file
  // over it would replace the device node, not write to it.
  if (exists && !S_ISREG(target.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw save_error(path.string() + ": cannot open: " + errno_text(errno));
    int err = write_all(fd, content) ? 0 : errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) throw save_error(path.string() + ": write failed: " + errno_text(err));
    return;
  }
  if (exists) {
    if (const std::string why = why_not_replaceable(path, target); !why.empty())
      throw save_error(path.string() + ": " + why);
  }
  const auto dir = parent_or_dot(path);
  std::string tmp;
  const int fd = create_beside(dir, path.filename().string(), tmp);
  if (fd < 0)
    throw save_error(path.string() + ": cannot create a temporary file: " + errno_text(errno));
  int err = 0;
  if (exists) {
    // The new file is the old one's, before a byte is in it: same mode (a private result stays
    // private, never readable by others for a moment), and the same owner where this process
    // may give it (root replacing a user's file). A file system that cannot change modes
    // (vfat, some FUSE mounts) is let be, unless the file would end up looser than the old.
    (void)!::fchown(fd, target.st_uid, target.st_gid);
    if (::fchmod(fd, target.st_mode & 07777) != 0) {
      const int chmod_err = errno;
      struct stat now {};
      if (::fstat(fd, &now) != 0 || (now.st_mode & 07777 & ~(target.st_mode & 07777)) != 0)
        err = chmod_err;
    }
  }
  if (err == 0 && !write_all(fd, content)) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw save_error(path.string() + ": write failed: " + errno_text(err));
  }
}

void check_writable(const std::filesystem::path& path) {
  if (path == "-") return;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw input_error(path.string(), {}, "is a directory, expected a file path");
  const auto dir = parent_or_dot(path);
  struct stat target {};
  const bool exists = ::stat(path.c_str(), &target) == 0;
  if (exists && !S_ISREG(target.st_mode)) {
    // A device or a pipe is written in place (see write_file_atomic).
    if (::access(path.c_str(), W_OK) != 0)
      throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
    return;
  }
  if (!std::filesystem::is_directory(dir, ec))
    throw input_error(
        path.string(), {},
        "cannot write: " + dir.string() +
            (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist"));
  if (exists) {
    if (const std::string why = why_not_replaceable(path, target); !why.empty())
      throw input_error(path.string(), {}, why);
  }
  std::string tmp;
  const int fd = create_beside(dir, ".pinbench-write-check", tmp);
  if (fd < 0) throw input_error(path.string(), {}, "cannot write: " + errno_text(errno));
  ::close(fd);
  ::unlink(tmp.c_str());
}

void check_distinct_files(const std::vector<named_file>& inputs,
                          const std::vector<named_file>& outputs) {
  namespace fs = std::filesystem;
  struct seen {
    const named_file* file;
    bool is_input;
    bool exists;
    dev_t device;
    ino_t inode;
    fs::path absolute;  ///< for a file not there yet: where it will be
  };
  std::vector<seen> files;
  const auto add = [&](const named_file& f, bool is_input) {
    if (f.path.empty() || f.path == "-") return;
    struct stat st {};
    const bool exists = ::stat(f.path.c_str(), &st) == 0;
    // Devices and pipes (/dev/null, /dev/stdout) are written in place; two outputs may share
    // one, and none of them can be an input that a write would destroy.
    if (exists && !S_ISREG(st.st_mode)) return;
    if (!exists && is_input) return;
    std::error_code ec;
    fs::path absolute = fs::weakly_canonical(fs::absolute(f.path, ec), ec);
    files.push_back({&f, is_input, exists, exists ? st.st_dev : dev_t{},
                     exists ? st.st_ino : ino_t{}, std::move(absolute)});
  };
  for (const auto& f : inputs) add(f, true);
  for (const auto& f : outputs) add(f, false);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].is_input) continue;
    for (std::size_t k = 0; k < i; ++k) {
      const auto& out = files[i];
      const auto& other = files[k];
      const bool same = out.exists && other.exists
                            ? out.device == other.device && out.inode == other.inode
                            : !out.exists && !other.exists && !out.absolute.empty() &&
                                  out.absolute == other.absolute;
      if (!same) continue;
      throw input_error(fmt::format("{} {} is also {} {}: {}", out.file->role, out.file->path,
                                    other.file->role, other.file->path,
                                    other.is_input ? "an output never replaces an input"
                                                   : "two outputs cannot share a file"));
    }
  }
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
