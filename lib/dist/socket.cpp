#include "dist/socket.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::dist::net {

socket_fd& socket_fd::operator=(socket_fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

int socket_fd::release() noexcept {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void socket_fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int millis_left(steady::time_point deadline) {
  auto left = deadline - steady::now();
  if (left <= steady::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

namespace {

struct addrinfo_deleter {
  void operator()(addrinfo* list) const noexcept { freeaddrinfo(list); }
};
using addresses = std::unique_ptr<addrinfo, addrinfo_deleter>;

addresses resolve(const std::string& host, int port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0) {
    why = fmt::format("cannot resolve {}: {}", host, gai_strerror(rc));
    return nullptr;
  }
  return addresses(list);
}

socket_fd open_socket(int family) {
  socket_fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw error(fmt::format("socket(): {}", std::strerror(errno)));
  return fd;
}

void no_delay(int fd) {
  // Collectives send one small message and wait for the answer: Nagle would only delay it.
  int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

}  // namespace

socket_fd listen_on(const std::string& host, int port) {
  std::string why;
  auto list = resolve(host, port, why);
  if (!list) throw environment_error(fmt::format("cannot listen on {}:{}: {}", host, port, why));
  // Every address of host's family, not host's own: a host name may resolve to 127.0.1.1 here
  // (Debian's /etc/hosts) and to the network address on the other nodes.
  const int family = list->ai_family;
  socket_fd fd = open_socket(family);
  int on = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_storage any{};
  socklen_t length = 0;
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&any);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    a->sin6_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&any);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons(static_cast<std::uint16_t>(port));
    length = sizeof *a;
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&any), length) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    throw environment_error(
        fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(errno)));
  }
  return fd;
}

socket_fd accept_one(const socket_fd& listener, steady::time_point deadline) {
  for (;;) {
    pollfd p{listener.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, millis_left(deadline));
    if (ready < 0 && errno != EINTR) throw error(fmt::format("poll(): {}", std::strerror(errno)));
    if (ready > 0) {
      socket_fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (fd.valid()) {
        no_delay(fd.get());
        return fd;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        throw error(fmt::format("accept(): {}", std::strerror(errno)));
      }
    }
    if (millis_left(deadline) == 0) return {};
  }
}

socket_fd dial(const std::string& host, int port, steady::time_point deadline, std::string& why) {
  using namespace std::chrono_literals;
  for (;;) {
    if (auto list = resolve(host, port, why)) {
      for (addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
        socket_fd fd = open_socket(a->ai_family);
        int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
          pollfd p{fd.get(), POLLOUT, 0};
          // A lost SYN must not outlive the deadline: the wait is bounded like any other.
          rc = ::poll(&p, 1, millis_left(deadline)) > 0 ? 0 : -1;
          int err = rc == 0 ? 0 : ETIMEDOUT;
          socklen_t length = sizeof err;
          if (rc == 0) ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &length);
          errno = err;
          rc = err == 0 ? 0 : -1;
        }
        if (rc == 0) {
          no_delay(fd.get());
          return fd;
        }
        why = fmt::format("cannot connect to {}:{}: {}", host, port, std::strerror(errno));
      }
    }
    if (millis_left(deadline) == 0) return {};
    // Rank 0 may start later than this rank: ask again shortly.
    std::this_thread::sleep_for(std::min<steady::duration>(50ms, deadline - steady::now()));
  }
}

io write_all(int fd, const void* data, std::size_t size, steady::time_point deadline) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent > 0) {
      bytes += sent;
      size -= static_cast<std::size_t>(sent);
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) return io::closed;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw error(fmt::format("send(): {}", std::strerror(errno)));
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, millis_left(deadline));
    if (ready == 0) return io::timed_out;
    if (ready < 0 && errno != EINTR) throw error(fmt::format("poll(): {}", std::strerror(errno)));
  }
  return io::done;
}

long read_available(int fd, void* data, std::size_t size) {
  for (;;) {
    ssize_t got = ::recv(fd, data, size, MSG_DONTWAIT);
    if (got > 0) return got;
    if (got == 0 && size > 0) return -1;
    if (got == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == ECONNRESET || errno == EPIPE || errno == ETIMEDOUT) return -1;
    throw error(fmt::format("recv(): {}", std::strerror(errno)));
  }
}

io read_all(int fd, void* data, std::size_t size, steady::time_point deadline) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    long got = read_available(fd, bytes, size);
    if (got < 0) return io::closed;
    if (got > 0) {
      bytes += got;
      size -= static_cast<std::size_t>(got);
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, millis_left(deadline));
    if (ready == 0) return io::timed_out;
    if (ready < 0 && errno != EINTR) throw error(fmt::format("poll(): {}", std::strerror(errno)));
  }
  return io::done;
}

}  // namespace pinbench::dist::net
