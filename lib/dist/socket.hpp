// TCP sockets with a deadline on every wait, for the tcp communicator: a listening socket for
// rank 0, a connect that retries while rank 0 is not up yet, and whole reads and writes. Every
// socket is non-blocking; waits go through poll().
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace pinbench::dist::net {

using steady = std::chrono::steady_clock;

/// Owns a file descriptor; closes it when destroyed.
class socket_fd {
 public:
  socket_fd() = default;
  explicit socket_fd(int fd) noexcept : fd_(fd) {}
  socket_fd(socket_fd&& other) noexcept : fd_(other.release()) {}
  socket_fd& operator=(socket_fd&& other) noexcept;
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
  ~socket_fd() { reset(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  void reset() noexcept;

 private:
  int fd_ = -1;
};

/// Milliseconds left before `deadline` for poll(), rounded up; 0 once it has passed.
[[nodiscard]] int millis_left(steady::time_point deadline);

/// A socket listening on `port` of every address of host's family (IPv6: IPv4 too). Throws
/// environment_error naming host:port and why.
[[nodiscard]] socket_fd listen_on(const std::string& host, int port);

/// The next connection to `listener`; an invalid socket when the deadline passes first.
[[nodiscard]] socket_fd accept_one(const socket_fd& listener, steady::time_point deadline);

/// Connects to host:port, retrying while nobody listens yet, until the deadline; an invalid
/// socket then, with the last reason in `why`.
[[nodiscard]] socket_fd dial(const std::string& host, int port, steady::time_point deadline,
                             std::string& why);

enum class io { done, closed, timed_out };

/// Writes or reads exactly `size` bytes. `closed`: the peer closed or reset the connection.
/// Other socket errors throw pinbench::error.
[[nodiscard]] io write_all(int fd, const void* data, std::size_t size, steady::time_point deadline);
[[nodiscard]] io read_all(int fd, void* data, std::size_t size, steady::time_point deadline);

/// Reads what is available now, without waiting: bytes read, 0 when nothing is, -1 when the peer
/// closed or reset the connection.
[[nodiscard]] long read_available(int fd, void* data, std::size_t size);

}  // namespace pinbench::dist::net
