#include "loader/process_workers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "loader/loader.hpp"

namespace pinbench::loader {

namespace {

// The wire: a task is one fixed record; a reply is a fixed header, then up to max_text bytes of
// text (errors), with the segment's descriptor as ancillary data (batches). SOCK_SEQPACKET keeps
// each message whole.
enum class wire : std::uint32_t { task = 1, ready = 2, batch = 3, error = 4 };
struct task_record {
  wire type = wire::task;
  std::uint32_t unused = 0;
  std::uint64_t epoch = 0, number = 0;
};
struct reply_header {
  wire type = wire::ready;
  std::uint32_t text_bytes = 0;
  std::uint64_t epoch = 0, number = 0, samples = 0, bytes = 0, mapped_bytes = 0;
  std::int64_t build_ns = 0, sent_at_ns = 0;
};
constexpr std::size_t max_text = 2048;

std::string errno_text(int err) {
  return std::strerror(err);
}

void send_reply(int fd, reply_header h, const std::string& text, int segment) {
  const std::size_t n = std::min(text.size(), max_text);
  h.text_bytes = static_cast<std::uint32_t>(n);
  iovec iov[2] = {{&h, sizeof h}, {const_cast<char*>(text.data()), n}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = n > 0 ? 2 : 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (segment >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &segment, sizeof(int));
  }
  while (::sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
    if (errno != EINTR) ::_exit(0);  // the main process is gone or stopped listening
}

std::uint64_t shm_free_bytes() {
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

// One batch into a new segment: created in /dev/shm and unlinked at once (only the descriptors
// keep it), sized with posix_fallocate so that a full /dev/shm is an error here rather than a
// SIGBUS on the first write. Returns the descriptor; throws loader_error.
int build_segment(const dataset& data, const std::vector<std::uint64_t>& indices, std::uint64_t seq,
                  reply_header& h) {
  h.samples = indices.size();
  h.bytes = batch_bytes(indices.size(), data.sample_bytes());
  const bool costs = data.jpeg() != nullptr;
  h.mapped_bytes =
      std::max<std::size_t>(1, h.bytes + (costs ? indices.size() * sizeof(sample_cost) : 0));
  const std::string name = fmt::format("/pinbench-{}-{}", ::getpid(), seq);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw loader_error(fmt::format("shm_open {}: {}", name, errno_text(errno)));
  ::shm_unlink(name.c_str());
  struct closer {
    int fd;
    bool keep = false;
    ~closer() {
      if (!keep) ::close(fd);
    }
  } guard{fd};
  if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(h.mapped_bytes)); rc != 0) {
    if (rc == ENOSPC)
      throw loader_error(
          fmt::format("/dev/shm has no room for a batch of {} ({} free): enlarge it (docker run "
                      "--shm-size) or use a smaller batch_size, prefetch_factor or num_workers",
                      format_bytes(h.mapped_bytes), format_bytes(shm_free_bytes())));
    throw loader_error(fmt::format("sizing a shared-memory segment: {}", errno_text(rc)));
  }
  void* p =
      ::mmap(nullptr, h.mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw loader_error(fmt::format("mapping a segment: {}", errno_text(errno)));
  auto* base = static_cast<std::byte*>(p);
  sample_cost* cost_area = costs ? reinterpret_cast<sample_cost*>(base + h.bytes) : nullptr;
  const std::int64_t t0 = now_ns();
  try {
    collate_batch(data, indices, base, cost_area, nullptr);
  } catch (...) {
    ::munmap(p, h.mapped_bytes);
    throw;
  }
  h.build_ns = now_ns() - t0;
  ::munmap(p, h.mapped_bytes);
  guard.keep = true;
  return fd;
}

// A worker's life: say it is ready, then build the batches it is asked for until its socket
// closes. Never returns; nothing of the parent's (atexit handlers, destructors) runs here.
[[noreturn]] void worker_main(const dataset& data, const loader_spec& spec, int w, int fd,
                              pid_t parent) {
  // Named as ps and top show it (PyTorch's show as the interpreter; a name says whose they are).
  const std::string name = fmt::format("pinbench-w{}", w);
  ::prctl(PR_SET_NAME, name.c_str());
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C is the main process's to handle: it stops the workers
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  // No PR_SET_PDEATHSIG: it fires when the forking *thread* ends. A main process that dies
  // closes its end of the socket, and the worker's next recv or send ends it.
  if (::getppid() != parent) ::_exit(0);
  try {
    reply_header hello;
    hello.type = wire::ready;
    hello.sent_at_ns = now_ns();
    send_reply(fd, hello, {}, -1);
    std::uint64_t plan_epoch = std::numeric_limits<std::uint64_t>::max();
    std::vector<std::vector<std::uint64_t>> plan;
    for (std::uint64_t seq = 0;; ++seq) {
      task_record t;
      const ssize_t n = ::recv(fd, &t, sizeof t, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n != static_cast<ssize_t>(sizeof t)) ::_exit(0);  // closed: the pool is stopping
      if (t.epoch != plan_epoch) {  // the same order as the main process's, made here
        plan = epoch_batches(data.size(), spec, t.epoch);
        plan_epoch = t.epoch;
      }
      reply_header h;
      h.epoch = t.epoch;
      h.number = t.number;
      if (t.number >= plan.size()) {
        h.type = wire::error;
        send_reply(fd, h, fmt::format("asked for batch {} of {}", t.number, plan.size()), -1);
        continue;
      }
      try {
        const int segment = build_segment(data, plan[t.number], seq, h);
        h.type = wire::batch;
        h.sent_at_ns = now_ns();
        send_reply(fd, h, {}, segment);
        ::close(segment);
      } catch (const std::exception& e) {
        h.type = wire::error;
        send_reply(fd, h, e.what(), -1);
      }
    }
  } catch (...) {
    ::_exit(3);
  }
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, name != nullptr ? name : "?");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

std::size_t segment_bytes(const loader_spec& spec, const dataset& data) noexcept {
  const std::size_t b = batch_bytes(spec.batch_size, data.sample_bytes());
  return b + (data.jpeg() != nullptr ? spec.batch_size * sizeof(sample_cost) : 0);
}

void check_shared_memory(const loader_spec& spec, const dataset& data) {
  // In flight at once: every outstanding batch, and one more being built per worker.
  const std::uint64_t segments =
      max_outstanding(spec) + static_cast<std::uint64_t>(std::max(0, spec.num_workers));
  const std::uint64_t per = segment_bytes(spec, data);
  const std::uint64_t need = per != 0 && segments > UINT64_MAX / per ? UINT64_MAX : segments * per;
  const std::uint64_t free = shm_free_bytes();
  if (need > free)
    throw environment_error(fmt::format(
        "loader: /dev/shm has {} free; process workers need about {} for the batches in "
        "flight ({} segments of {}): enlarge /dev/shm (docker run --shm-size={}), or use "
        "fewer num_workers, a smaller prefetch_factor or batch_size, or worker_method thread",
        format_bytes(free), format_bytes(need), segments, format_bytes(per), format_bytes(need)));
}

std::optional<process_memory> read_process_memory(pid_t pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/smaps_rollup") : fmt::format("/proc/{}/smaps_rollup", pid);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  process_memory m;
  m.pid = pid == 0 ? ::getpid() : pid;
  bool rss = false, pss = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Rss:", 0) == 0) {
      m.rss_bytes = std::stoull(line.substr(4)) * 1024;
      rss = true;
    } else if (line.rfind("Pss:", 0) == 0) {
      m.pss_bytes = std::stoull(line.substr(4)) * 1024;
      pss = true;
    }
  }
  if (!rss || !pss) return std::nullopt;
  return m;
}

void unmap_segment(std::byte* mapping, std::size_t bytes) noexcept {
  if (mapping != nullptr) ::munmap(mapping, bytes);
}

process_workers::process_workers(const dataset& data, const loader_spec& spec, int count) {
  check_shared_memory(spec, data);
  const pid_t parent = ::getpid();
  started_at_ = now_ns();
  try {
    for (int w = 0; w < count; ++w) {
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw environment_error(fmt::format("loader: socketpair: {}", errno_text(errno)));
      const pid_t pid = ::fork();
      if (pid < 0) {
        const int err = errno;
        ::close(pair[0]);
        ::close(pair[1]);
        throw environment_error(
            fmt::format("loader: cannot start worker process {}: {}", w, errno_text(err)));
      }
      if (pid == 0) {
        for (const auto& other : workers_) ::close(other.fd);
        ::close(pair[0]);
        worker_main(data, spec, w, pair[1], parent);
      }
      ::close(pair[1]);
      workers_.push_back({pid, pair[0]});
    }
  } catch (...) {
    stop();
    throw;
  }
}

process_workers::~process_workers() {
  stop();
}

bool process_workers::send_task(int w, std::uint64_t epoch, std::uint64_t number) noexcept {
  task_record t;
  t.epoch = epoch;
  t.number = number;
  const int fd = workers_[static_cast<std::size_t>(w)].fd;
  for (;;) {
    if (::send(fd, &t, sizeof t, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof t)) return true;
    if (errno != EINTR) return false;
  }
}

worker_message process_workers::receive(int w) {
  worker& wk = workers_[static_cast<std::size_t>(w)];
  worker_message m;
  m.worker = w;
  reply_header h;
  char text[max_text];
  iovec iov[2] = {{&h, sizeof h}, {text, sizeof text}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = ::recvmsg(wk.fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  int segment = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&segment, CMSG_DATA(c), sizeof(int));
  if (n < static_cast<ssize_t>(sizeof h)) {
    if (segment >= 0) ::close(segment);
    m.what = worker_message::kind::gone;
    m.text = how_it_ended(wk);
    broken_ = true;
    return m;
  }
  m.epoch = h.epoch;
  m.number = h.number;
  m.samples = h.samples;
  m.bytes = h.bytes;
  m.build_ns = h.build_ns;
  m.sent_at_ns = h.sent_at_ns;
  m.text.assign(text, std::min<std::size_t>(h.text_bytes, static_cast<std::size_t>(n) - sizeof h));
  switch (h.type) {
    case wire::ready:
      m.what = worker_message::kind::ready;
      break;
    case wire::error:
      m.what = worker_message::kind::error;
      break;
    case wire::batch: {
      m.what = worker_message::kind::batch;
      if (segment < 0) {
        m.what = worker_message::kind::error;
        m.text = "a batch arrived without its segment";
        break;
      }
      // Read-only: the main process only copies out of it, and a read-only mapping of fresh pages
      // is cheaper to walk (measured about 3x on the 2-core VM: 0.7 ms against 2.2 ms per 2 MiB).
      void* p = ::mmap(nullptr, h.mapped_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, segment, 0);
      if (p == MAP_FAILED) {
        m.what = worker_message::kind::error;
        m.text = fmt::format("mapping batch {}'s segment: {}", h.number, errno_text(errno));
        break;
      }
      m.mapping = static_cast<std::byte*>(p);
      m.mapped_bytes = h.mapped_bytes;
      break;
    }
    default:
      m.what = worker_message::kind::error;
      m.text = "an unknown message";
  }
  if (segment >= 0) ::close(segment);
  return m;
}

std::vector<process_memory> process_workers::memory() const {
  std::vector<process_memory> out;
  out.reserve(workers_.size());
  for (const auto& w : workers_)
    if (!w.reaped)
      if (auto m = read_process_memory(w.pid)) out.push_back(*m);
  return out;
}

// The worker closed its socket: it is exiting (or was killed); its status, once reaped.
std::string process_workers::how_it_ended(worker& w) {
  const std::int64_t deadline = now_ns() + 2'000'000'000;
  while (!w.reaped) {
    const pid_t r = ::waitpid(w.pid, &w.status, WNOHANG);
    if (r == w.pid || (r < 0 && errno == ECHILD)) {
      w.reaped = true;
      break;
    }
    if (now_ns() > deadline) return "closed its socket";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return describe_status(w.status);
}

// Closing the sockets ends idle workers (their recv sees the end); a worker still building a
// batch gets a short grace, then SIGKILL. Every one is reaped: no zombie, no process left.
void process_workers::stop() noexcept {
  for (auto& w : workers_) {
    if (w.fd >= 0) ::close(w.fd);
    w.fd = -1;
  }
  const std::int64_t grace_end = now_ns() + 200'000'000;
  for (;;) {
    bool all = true;
    for (auto& w : workers_) {
      if (w.reaped) continue;
      const pid_t r = ::waitpid(w.pid, &w.status, WNOHANG);
      if (r == w.pid || (r < 0 && errno == ECHILD))
        w.reaped = true;
      else
        all = false;
    }
    if (all || now_ns() > grace_end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& w : workers_) {
    if (w.reaped) continue;
    ::kill(w.pid, SIGKILL);
    while (::waitpid(w.pid, &w.status, 0) < 0 && errno == EINTR) {
    }
    w.reaped = true;
  }
}

}  // namespace pinbench::loader
