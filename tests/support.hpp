// Small helpers that tests in several folders need: one home for each, so that a folder's test
// files, compiled as one translation unit in the unity builds, never define the same name twice.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench::testing {

/// An allocator scenario that replays `trace_file` once (one untimed-enough sample): the
/// document, to be written where a test wants it.
inline nlohmann::json trace_replay_scenario(const std::string& name, const std::string& trace_file,
                                            const std::string& config,
                                            const std::string& device_memory) {
  return {{"schema", "pinbench.scenario/1"},
          {"name", name},
          {"kind", "allocator"},
          {"params",
           {{"workload", "trace"},
            {"trace_file", trace_file},
            {"config", config},
            {"device_memory", device_memory}}},
          {"sampling", {{"warmup", 0}, {"min_samples", 1}, {"max_samples", 1}}}};
}

/// A file's bytes as a string ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A file's bytes.
inline std::vector<std::byte> read_binary(const std::filesystem::path& p) {
  const std::string text = read_text(p);
  std::vector<std::byte> bytes(text.size());
  std::transform(text.begin(), text.end(), bytes.begin(),
                 [](char c) { return static_cast<std::byte>(c); });
  return bytes;
}

inline std::size_t line_count(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

/// A loopback TCP port that was free a moment ago (0 when none could be had).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

/// Rewrites the size a baseline JPEG's frame header (SOF0: FF C0, length, precision, height,
/// width) declares, leaving the data as it is: a small file that claims a huge image. False when
/// the file has no such header.
inline bool declare_jpeg_size(std::vector<std::byte>& file, int width, int height) {
  for (std::size_t i = 0; i + 8 < file.size(); ++i) {
    if (file[i] != std::byte{0xFF} || file[i + 1] != std::byte{0xC0}) continue;
    file[i + 5] = static_cast<std::byte>((height >> 8) & 0xFF);
    file[i + 6] = static_cast<std::byte>(height & 0xFF);
    file[i + 7] = static_cast<std::byte>((width >> 8) & 0xFF);
    file[i + 8] = static_cast<std::byte>(width & 0xFF);
    return true;
  }
  return false;
}

/// `bytes` written to `p` (created or truncated).
inline void write_binary(const std::filesystem::path& p, const std::vector<std::byte>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

/// A made-up process environment, and a getenv over it (dist::getenv_fn's shape) for code
/// that reads launcher variables: nullptr for a name it lacks.
using env_map = std::map<std::string, std::string>;
inline auto getenv_of(const env_map& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace pinbench::testing
