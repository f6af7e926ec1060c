// Result files are written whole or not at all: a temporary file beside the target, then rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pinbench {

/// Writes `content` to `path` atomically: a crash, a full disk or Ctrl-C leaves either the old
/// file (if any) or the new one, never a truncated one. "-" writes to stdout instead. A file it
/// replaces keeps its mode (and owner, where the process may set it); a new one gets 0666 less
/// the umask. A file the user may not write, or that nobody may (no write bit), is not replaced.
/// Throws save_error (exit 3) naming the path and the reason (errno text) on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

/// Checks, before any measuring, that `path` can later be written: its directory exists, a
/// file can be created there, and an existing file may be replaced (see write_file_atomic).
/// Throws input_error naming the path otherwise. "-" always passes.
void check_writable(const std::filesystem::path& path);

/// A file a command reads or writes, and what it is to the user ("--out", "the scenario").
struct named_file {
  std::string role;
  std::string path;
};

/// Refuses (input_error, exit 2, one line naming both) an output that is one of the inputs or
/// another output: the same file by device and inode (a hard link or a symbolic link is
/// caught), or, for a file not there yet, the same absolute path. "-", devices and pipes are
/// left out (they are written in place and may be shared).
void check_distinct_files(const std::vector<named_file>& inputs,
                          const std::vector<named_file>& outputs);

/// What read_file accepts besides a regular file.
enum class pipes {
  refuse,  ///< a FIFO is refused like a device or a socket
  read,    ///< a FIFO (or a shell's `<(...)`) is read as far as its writers write; with no
           ///< writer it reads as empty rather than waiting for one
};

/// Reads a whole file. Throws input_error("FILE: cannot read: reason") on failure, and
/// input_error("FILE: too large: ...") for a file over `max_bytes` (never read past it).
/// What is not a regular file (a directory, a device such as /dev/zero, a socket, a FIFO unless
/// `pipes::read`) is refused by its type, found with stat before anything is opened: opening a
/// FIFO would wait for a writer, and reading a device need never end.
[[nodiscard]] std::string read_file(const std::filesystem::path& path,
                                    std::uint64_t max_bytes = UINT64_MAX,
                                    pipes fifo = pipes::refuse);

}  // namespace pinbench
