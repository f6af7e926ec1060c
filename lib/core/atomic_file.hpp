// Result files are written whole or not at all: a temporary file beside the target, then rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace pinbench {

/// Writes `content` to `path` atomically: a crash, a full disk or Ctrl-C leaves either the old
/// file (if any) or the new one, never a truncated one. "-" writes to stdout instead.
/// Throws pinbench::error naming the path and the reason (errno text) on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

/// Checks, before any measuring, that `path` can later be written: its directory exists and a
/// file can be created there. Throws input_error naming the path otherwise. "-" always passes.
void check_writable(const std::filesystem::path& path);

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
