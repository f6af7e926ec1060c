#include "dist/tcp.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dist/socket.hpp"

namespace pinbench::dist {

namespace {

using net::steady;

// How much longer than rank 0 the other ranks wait in a call (see star()).
constexpr timeout lead_grace{std::chrono::seconds(10)};

constexpr std::uint32_t wire_magic = 0x31444250;  // "PBD1"

enum class op : std::uint32_t {
  hello = 1,
  barrier,
  all_gather,
  broadcast,
  all_reduce_sum,
  all_gather_block,
  reduce_scatter_sum,
  broadcast_block,
  send_recv,
  stop  ///< rank 0 stops the launch after a loss (stop_others); the body says why
};

const char* name_of(op o) {
  switch (o) {
    case op::hello:
      return "connect";
    case op::barrier:
      return "barrier";
    case op::all_gather:
      return "all_gather";
    case op::broadcast:
      return "broadcast";
    case op::all_reduce_sum:
      return "all_reduce_sum";
    case op::all_gather_block:
      return "all_gather_block";
    case op::reduce_scatter_sum:
      return "reduce_scatter_sum";
    case op::broadcast_block:
      return "broadcast_block";
    case op::send_recv:
      return "send_recv";
    case op::stop:
      return "stop";
  }
  return "?";
}

// What travels before every message. `code` names the call and its element type, `sequence`
// counts calls: a rank that makes another call than the others is caught at rank 0.
struct header {
  std::uint32_t magic = wire_magic;
  std::uint32_t code = 0;
  std::uint64_t sequence = 0;
  std::uint64_t length = 0;
};
static_assert(sizeof(header) == 24);

std::uint32_t code_of(op o, int type = -1) {
  return static_cast<std::uint32_t>(o) * 16 + static_cast<std::uint32_t>(type + 1);
}
const char* name_of_code(std::uint32_t code) {
  return name_of(static_cast<op>(code / 16));
}

template <typename T>
void add_into(std::string& acc, const std::string& part) {
  const std::size_t n = acc.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    T a;
    T b;
    std::memcpy(&a, acc.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, part.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, std::int32_t>) {
      // Wraps like MPI's int sum does in practice, without signed overflow.
      a = static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
    } else {
      a += b;
    }
    std::memcpy(acc.data() + i * sizeof(T), &a, sizeof(T));
  }
}

void add_into(std::string& acc, const std::string& part, element e) {
  switch (e) {
    case element::f32:
      add_into<float>(acc, part);
      break;
    case element::f64:
      add_into<double>(acc, part);
      break;
    case element::i32:
      add_into<std::int32_t>(acc, part);
      break;
  }
}

void put_u64(std::string& out, std::uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
std::uint64_t get_u64(const std::string& in, std::size_t at) {
  std::uint64_t value = 0;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}

class tcp_communicator final : public communicator {
 public:
  // links: rank 0 holds one per other rank (index = rank, [0] unused); the others hold rank 0's.
  tcp_communicator(int rank, int size, std::vector<net::socket_fd> links, std::uint64_t sequence)
      : rank_(rank), size_(size), links_(std::move(links)), sequence_(sequence) {}

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  [[nodiscard]] std::string_view transport() const noexcept override {
    return to_string(transport_kind::tcp);
  }

  void barrier(timeout limit) override {
    (void)star(
        code_of(op::barrier), {}, [](parts_t&) { return replies_t{std::string{}}; }, limit);
  }

  std::vector<std::string> all_gather(std::string_view mine, timeout limit) override {
    std::string blob = star(
        code_of(op::all_gather), std::string(mine),
        [](parts_t& parts) {
          std::string out;
          put_u64(out, parts.size());
          for (auto& p : parts) put_u64(out, p.size());
          for (auto& p : parts) out += p;
          return replies_t{std::move(out)};
        },
        limit);
    std::vector<std::string> parts(static_cast<std::size_t>(size_));
    std::size_t at = 8 + parts.size() * 8;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto length = static_cast<std::size_t>(get_u64(blob, 8 + i * 8));
      parts[i] = blob.substr(at, length);
      at += length;
    }
    return parts;
  }

  void broadcast(std::string& data, int root, timeout limit) override {
    check_rank(root, "broadcast root");
    std::string reply = star(
        code_of(op::broadcast), rank_ == root ? data : std::string{},
        [root](parts_t& parts) {
          return replies_t{std::move(parts[static_cast<std::size_t>(root)])};
        },
        limit);
    if (rank_ != root) data = std::move(reply);
  }

  void all_reduce_sum(const void* send, void* recv, std::size_t count, element e,
                      timeout limit) override {
    const std::size_t bytes = count * size_of(e);
    std::string reply = star(
        code_of(op::all_reduce_sum, static_cast<int>(e)), bytes_of(send, bytes),
        [&](parts_t& parts) {
          same_length(parts, bytes, "all_reduce_sum");
          for (std::size_t i = 1; i < parts.size(); ++i) {
            add_into(parts[0], parts[i], e);
          }
          return replies_t{std::move(parts[0])};
        },
        limit);
    copy_reply(reply, recv, bytes);
  }

  void all_gather_block(const void* send, void* recv, std::size_t count, element e,
                        timeout limit) override {
    const std::size_t bytes = count * size_of(e);
    std::string reply = star(
        code_of(op::all_gather_block, static_cast<int>(e)), bytes_of(send, bytes),
        [&](parts_t& parts) {
          same_length(parts, bytes, "all_gather_block");
          std::string out;
          out.reserve(bytes * parts.size());
          for (auto& p : parts) out += p;
          return replies_t{std::move(out)};
        },
        limit);
    copy_reply(reply, recv, bytes * static_cast<std::size_t>(size_));
  }

  void reduce_scatter_sum(const void* send, void* recv, std::size_t count, element e,
                          timeout limit) override {
    const std::size_t bytes = count * size_of(e);
    const auto ranks = static_cast<std::size_t>(size_);
    std::string reply = star(
        code_of(op::reduce_scatter_sum, static_cast<int>(e)), bytes_of(send, bytes * ranks),
        [&](parts_t& parts) {
          same_length(parts, bytes * ranks, "reduce_scatter_sum");
          for (std::size_t i = 1; i < parts.size(); ++i) {
            add_into(parts[0], parts[i], e);
          }
          replies_t out(ranks);
          for (std::size_t i = 0; i < ranks; ++i) {
            out[i] = parts[0].substr(i * bytes, bytes);
          }
          return out;
        },
        limit);
    copy_reply(reply, recv, bytes);
  }

  void broadcast_block(void* data, std::size_t count, element e, int root, timeout limit) override {
    check_rank(root, "broadcast_block root");
    const std::size_t bytes = count * size_of(e);
    std::string reply = star(
        code_of(op::broadcast_block, static_cast<int>(e)),
        rank_ == root ? bytes_of(data, bytes) : std::string{},
        [&](parts_t& parts) {
          auto& from_root = parts[static_cast<std::size_t>(root)];
          if (from_root.size() != bytes) out_of_step("broadcast_block");
          return replies_t{std::move(from_root)};
        },
        limit);
    if (rank_ != root) copy_reply(reply, data, bytes);
  }

  void send_recv(const void* send, void* recv, std::size_t count, element e, int peer,
                 timeout limit) override {
    check_rank(peer, "send_recv peer");
    const std::size_t bytes = count * size_of(e);
    std::string mine;
    put_u64(mine, static_cast<std::uint64_t>(peer));
    mine += bytes_of(send, bytes);
    std::string reply = star(
        code_of(op::send_recv, static_cast<int>(e)), std::move(mine),
        [&](parts_t& parts) {
          same_length(parts, 8 + bytes, "send_recv");
          replies_t out(parts.size());
          for (std::size_t r = 0; r < parts.size(); ++r) {
            auto p = static_cast<std::size_t>(get_u64(parts[r], 0));
            if (p >= parts.size() || get_u64(parts[p], 0) != r) {
              throw error(
                  fmt::format("rank 0: send_recv: rank {} pairs with rank {}, which "
                              "does not pair with it",
                              r, p));
            }
            out[r] = parts[p].substr(8);
          }
          return out;
        },
        limit);
    copy_reply(reply, recv, bytes);
  }

  void stop_others(std::string_view why) noexcept override {
    // Only rank 0 holds a link to every other rank; the others' partner is rank 0 alone.
    if (rank_ != 0) return;
    header head;
    head.code = code_of(op::stop);
    head.sequence = sequence_;
    head.length = why.size();
    std::string frame(reinterpret_cast<const char*>(&head), sizeof head);
    frame.append(why.data(), why.size());
    // A rank that does not read within a moment is not waited for. The links stay open (only
    // this side's writing ends): closing one with unread bytes in it would reset it, and the
    // rank at the other end could lose the notice and take rank 0 for the lost one.
    const auto deadline = steady::now() + std::chrono::milliseconds(200);
    for (std::size_t peer = 1; peer < links_.size(); ++peer) {
      if (!links_[peer].valid()) continue;
      (void)net::write_all(links_[peer].get(), frame.data(), frame.size(), deadline);
      ::shutdown(links_[peer].get(), SHUT_WR);
    }
    broken_ = true;
  }

  [[noreturn]] void abort(int exit_code, std::string_view why) override {
    // `why` as given: the caller says which rank and why in its own words.
    std::fprintf(stderr, "%.*s\n", static_cast<int>(why.size()), why.data());
    std::fflush(stderr);
    // The others see their connection to this rank (or to rank 0, which then ends) break. Rank
    // 0 after stop_others first reads what the others still send, for a moment, so that a rank
    // in the middle of sending gets to its receive and reads the notice instead of a reset.
    if (rank_ == 0 && broken_) drain_links(steady::now() + std::chrono::seconds(2));
    for (auto& link : links_) link.reset();
    ::_exit(exit_code);
  }

 private:
  using parts_t = std::vector<std::string>;
  /// One reply for every rank, or one each (indexed by rank).
  using replies_t = std::vector<std::string>;
  using compute_t = std::function<replies_t(parts_t&)>;

  /// Every rank's `mine` goes to rank 0, which computes the replies and sends each rank its
  /// own; returns this rank's reply.
  std::string star(std::uint32_t code, std::string mine, const compute_t& compute, timeout limit) {
    if (broken_) {
      throw rank_lost_error(
          fmt::format("rank {}: {}: an earlier call lost a rank", rank_, name_of_code(code)));
    }
    broken_ = true;  // until this call completes
    // The others wait a little longer than rank 0: when a rank is lost, rank 0 sees it first
    // and says so (stop_others), so that no rank takes rank 0 for the lost one.
    const auto deadline = steady::now() + limit + (rank_ == 0 ? timeout{0} : lead_grace);
    ++sequence_;
    std::string reply;
    if (rank_ == 0) {
      parts_t parts = gather(code, std::move(mine), deadline, limit);
      replies_t replies = compute(parts);
      for (int peer = 1; peer < size_; ++peer) {
        const auto& r = replies.size() == 1 ? replies[0] : replies[static_cast<std::size_t>(peer)];
        send_frame(peer, code, r, deadline, limit);
      }
      reply = std::move(replies[0]);
    } else {
      send_frame(0, code, mine, deadline, limit);
      reply = receive_frame(code, deadline, limit);
    }
    broken_ = false;
    return reply;
  }

  /// Rank 0: reads and drops whatever the others send until each link ends or the deadline.
  void drain_links(steady::time_point deadline) {
    char sink[1 << 16];
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      for (std::size_t peer = 1; peer < links_.size(); ++peer)
        if (links_[peer].valid()) fds.push_back({links_[peer].get(), POLLIN, 0});
      if (fds.empty() || ::poll(fds.data(), fds.size(), net::millis_left(deadline)) <= 0) return;
      for (const auto& p : fds) {
        if (p.revents == 0) continue;
        if (net::read_available(p.fd, sink, sizeof sink) < 0) {
          for (auto& link : links_)
            if (link.valid() && link.get() == p.fd) link.reset();
        }
      }
    }
  }

  /// A rank other than 0 whose link to rank 0 broke: whether rank 0's stop notice is what
  /// came last (rank 0 ended the launch on purpose, after a loss it saw).
  [[nodiscard]] bool stop_notice_waiting() const {
    header head;
    return net::read_available(link(0), &head, sizeof head) == static_cast<long>(sizeof head) &&
           head.magic == wire_magic && head.code == code_of(op::stop);
  }

  struct incoming {
    header head;
    std::size_t head_got = 0;
    std::string body;
    std::size_t body_got = 0;
    bool done = false;
  };

  /// Rank 0: every other rank's message, read from all of them at once, so that any rank that
  /// closes its connection is seen at once, whichever the others are doing.
  parts_t gather(std::uint32_t code, std::string mine, steady::time_point deadline, timeout limit) {
    std::vector<incoming> in(static_cast<std::size_t>(size_));
    parts_t parts(static_cast<std::size_t>(size_));
    parts[0] = std::move(mine);
    int pending = size_ - 1;
    std::vector<pollfd> fds;
    std::vector<int> who;
    while (pending > 0) {
      fds.clear();
      who.clear();
      for (int peer = 1; peer < size_; ++peer) {
        if (in[static_cast<std::size_t>(peer)].done) continue;
        fds.push_back({link(peer), POLLIN, 0});
        who.push_back(peer);
      }
      int ready = ::poll(fds.data(), fds.size(), net::millis_left(deadline));
      if (ready < 0 && errno != EINTR) {
        throw error(fmt::format("poll(): {}", std::strerror(errno)));
      }
      if (ready == 0 && net::millis_left(deadline) == 0) {
        throw rank_lost_error(fmt::format("rank 0: no answer from rank {} within {:g} s in {}",
                                          fmt::join(who, ", "), seconds(limit), name_of_code(code)),
                              who.front());
      }
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto& state = in[static_cast<std::size_t>(who[i])];
        pump(who[i], state, code);
        if (state.done) {
          parts[static_cast<std::size_t>(who[i])] = std::move(state.body);
          --pending;
        }
      }
    }
    return parts;
  }

  /// Reads what `peer` has sent so far into `state`, without waiting.
  void pump(int peer, incoming& state, std::uint32_t code) {
    while (!state.done) {
      const bool in_head = state.head_got < sizeof(header);
      char* into = in_head ? reinterpret_cast<char*>(&state.head) + state.head_got
                           : state.body.data() + state.body_got;
      std::size_t want =
          in_head ? sizeof(header) - state.head_got : state.body.size() - state.body_got;
      long got = net::read_available(link(peer), into, want);
      if (got < 0) throw closed(peer, name_of_code(code));
      if (got == 0) return;
      if (in_head) {
        state.head_got += static_cast<std::size_t>(got);
        if (state.head_got == sizeof(header)) {
          check_header(peer, state.head, code);
          state.body.resize(static_cast<std::size_t>(state.head.length));
          state.done = state.body.empty();
        }
      } else {
        state.body_got += static_cast<std::size_t>(got);
        state.done = state.body_got == state.body.size();
      }
    }
  }

  void check_header(int peer, const header& head, std::uint32_t code) const {
    if (head.magic != wire_magic) {
      throw error(fmt::format("rank {}: rank {} sent bytes that are not pinbench's", rank_, peer));
    }
    if (head.code != code || head.sequence != sequence_) {
      throw error(fmt::format(
          "rank {}: ranks out of step: rank {} is in {} (call {}), this rank in {} (call {})",
          rank_, peer, name_of_code(head.code), head.sequence, name_of_code(code), sequence_));
    }
  }

  void send_frame(int peer, std::uint32_t code, const std::string& body,
                  steady::time_point deadline, timeout limit) {
    header head;
    head.code = code;
    head.sequence = sequence_;
    head.length = body.size();
    net::io result;
    if (body.size() <= 64 * 1024) {
      // One write for a small message: one segment on the wire.
      std::string frame(reinterpret_cast<const char*>(&head), sizeof head);
      frame += body;
      result = net::write_all(link(peer), frame.data(), frame.size(), deadline);
    } else {
      result = net::write_all(link(peer), &head, sizeof head, deadline);
      if (result == net::io::done) {
        result = net::write_all(link(peer), body.data(), body.size(), deadline);
      }
    }
    settle(result, peer, code, limit);
  }

  std::string receive_frame(std::uint32_t code, steady::time_point deadline, timeout limit) {
    header head;
    settle(net::read_all(link(0), &head, sizeof head, deadline), 0, code, limit);
    if (head.magic == wire_magic && head.code == code_of(op::stop)) {
      std::string why(static_cast<std::size_t>(std::min<std::uint64_t>(head.length, 4096)), '\0');
      (void)net::read_all(link(0), why.data(), why.size(), deadline);
      throw rank_lost_error(fmt::format("rank {}: rank 0 stopped the launch: {}", rank_, why), -1,
                            true);
    }
    check_header(0, head, code);
    std::string body(static_cast<std::size_t>(head.length), '\0');
    settle(net::read_all(link(0), body.data(), body.size(), deadline), 0, code, limit);
    return body;
  }

  void settle(net::io result, int peer, std::uint32_t code, timeout limit) const {
    if (result == net::io::closed) {
      if (rank_ != 0 && stop_notice_waiting())
        throw rank_lost_error(fmt::format("rank {}: rank 0 stopped the launch after a loss", rank_),
                              -1, true);
      throw closed(peer, name_of_code(code));
    }
    if (result == net::io::timed_out) {
      // Rank 0 answers once every rank has asked: its silence may be another rank's fault, so
      // a rank other than 0 cannot say which is lost (and does not write: rank 0 may).
      throw rank_lost_error(fmt::format("rank {}: no answer from rank {} within {:g} s in {}{}",
                                        rank_, peer, seconds(limit), name_of_code(code),
                                        rank_ == 0 ? "" : " (rank 0, or a rank it waits for)"),
                            rank_ == 0 ? peer : -1);
    }
  }

  [[nodiscard]] rank_lost_error closed(int peer, const char* what) const {
    return rank_lost_error(fmt::format("rank {}: rank {} closed its connection in {} (it exited or "
                                       "crashed)",
                                       rank_, peer, what),
                           peer);
  }

  [[nodiscard]] int link(int peer) const {
    return links_[rank_ == 0 ? static_cast<std::size_t>(peer) : 0].get();
  }

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size_) {
      throw error(fmt::format("rank {}: {} {} is outside [0, {})", rank_, what, r, size_));
    }
  }

  void same_length(const parts_t& parts, std::size_t bytes, const char* what) const {
    for (std::size_t r = 0; r < parts.size(); ++r) {
      if (parts[r].size() != bytes) {
        throw error(fmt::format("rank 0: {}: rank {} gave {} bytes, rank 0 {}", what, r,
                                parts[r].size(), bytes));
      }
    }
  }

  [[noreturn]] void out_of_step(const char* what) const {
    throw error(fmt::format("rank {}: {}: the ranks disagree on the length", rank_, what));
  }

  void copy_reply(const std::string& reply, void* into, std::size_t bytes) const {
    if (reply.size() != bytes) {
      throw error(fmt::format("rank {}: rank 0 answered {} bytes, {} expected", rank_, reply.size(),
                              bytes));
    }
    if (bytes > 0) std::memcpy(into, reply.data(), bytes);
  }

  static std::string bytes_of(const void* data, std::size_t bytes) {
    return bytes == 0 ? std::string{} : std::string(static_cast<const char*>(data), bytes);
  }

  int rank_, size_;
  std::vector<net::socket_fd> links_;
  std::uint64_t sequence_;
  bool broken_ = false;
};

struct hello_body {
  std::uint32_t rank = 0, size = 0;
  std::uint64_t launch = 0;  ///< the launch's token: another launch's rank on this port is not ours
};

std::unique_ptr<communicator> accept_ranks(int size, const std::string& host, int port,
                                           timeout limit, std::uint64_t launch) {
  const auto deadline = steady::now() + limit;
  net::socket_fd listener = net::listen_on(host, port);
  std::vector<net::socket_fd> links(static_cast<std::size_t>(size));
  int joined = 1;
  while (joined < size) {
    net::socket_fd fd = net::accept_one(listener, deadline);
    if (!fd.valid()) {
      std::vector<int> missing;
      for (int r = 1; r < size; ++r) {
        if (!links[static_cast<std::size_t>(r)].valid()) missing.push_back(r);
      }
      throw rank_lost_error(fmt::format("rank 0: rank {} did not connect to {}:{} within {:g} s",
                                        fmt::join(missing, ", "), host, port, seconds(limit)),
                            missing.front());
    }
    header head;
    hello_body hello;
    // A connection that says nothing sensible (it closed, or is not a rank) is dropped.
    if (net::read_all(fd.get(), &head, sizeof head, deadline) != net::io::done) continue;
    if (head.magic != wire_magic || head.code != code_of(op::hello) ||
        head.length != sizeof hello) {
      continue;
    }
    if (net::read_all(fd.get(), &hello, sizeof hello, deadline) != net::io::done) continue;
    // Another launch's rank that found this port (two steps whose ports coincide): dropped, and
    // it hears that this is not its rank 0.
    if (hello.launch != launch) continue;
    if (hello.size != static_cast<std::uint32_t>(size) || hello.rank == 0 ||
        hello.rank >= hello.size || links[hello.rank].valid()) {
      throw environment_error(fmt::format(
          "rank 0: a process at {}:{} says it is rank {} of {}, but this launch has {} ranks{}",
          host, port, hello.rank, hello.size, size,
          hello.rank < links.size() && links[hello.rank].valid() ? " and that rank joined" : ""));
    }
    links[hello.rank] = std::move(fd);
    ++joined;
  }
  for (int r = 1; r < size; ++r) {
    header welcome;
    welcome.code = code_of(op::hello);
    if (net::write_all(links[static_cast<std::size_t>(r)].get(), &welcome, sizeof welcome,
                       deadline) != net::io::done) {
      throw rank_lost_error(fmt::format("rank 0: rank {} left before the launch began", r), r);
    }
  }
  return std::make_unique<tcp_communicator>(0, size, std::move(links), 0);
}

std::unique_ptr<communicator> join_rank0(int rank, int size, const std::string& host, int port,
                                         timeout limit, std::uint64_t launch) {
  const auto deadline = steady::now() + limit;
  std::string why;
  net::socket_fd fd = net::dial(host, port, deadline, why);
  if (!fd.valid()) {
    throw rank_lost_error(fmt::format("rank {}: could not reach rank 0 at {}:{} within {:g} s: {}",
                                      rank, host, port, seconds(limit), why),
                          0);
  }
  header head;
  head.code = code_of(op::hello);
  head.length = sizeof(hello_body);
  hello_body hello{static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(size), launch};
  std::string frame(reinterpret_cast<const char*>(&head), sizeof head);
  frame.append(reinterpret_cast<const char*>(&hello), sizeof hello);
  header welcome;
  net::io result = net::write_all(fd.get(), frame.data(), frame.size(), deadline);
  if (result == net::io::done) result = net::read_all(fd.get(), &welcome, sizeof welcome, deadline);
  if (result != net::io::done || welcome.magic != wire_magic ||
      welcome.code != code_of(op::hello)) {
    throw rank_lost_error(fmt::format(
        "rank {}: rank 0 at {}:{} did not welcome this rank within {:g} s ({})", rank, host, port,
        seconds(limit),
        result == net::io::closed
            ? "it closed the connection: all ranks joined already, or it is another launch's?"
            : "no answer: it welcomes every rank once all have joined, and "
              "one may be missing"));
  }
  std::vector<net::socket_fd> links;
  links.push_back(std::move(fd));
  return std::make_unique<tcp_communicator>(rank, size, std::move(links), 0);
}

}  // namespace

std::unique_ptr<communicator> connect_tcp(int rank, int size, const std::string& host, int port,
                                          timeout limit, std::uint64_t launch) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw error(fmt::format("connect_tcp: rank {} of {} is not a rank", rank, size));
  }
  return rank == 0 ? accept_ranks(size, host, port, limit, launch)
                   : join_rank0(rank, size, host, port, limit, launch);
}

host_port parse_host_port(const std::string& text, const std::string& what) {
  auto bad = [&]() -> input_error {
    return input_error({}, what, fmt::format("expected host:port, got \"{}\"", text));
  };
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw bad();
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad();
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  const char* begin = text.data() + colon + 1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (begin == end || ec != std::errc{} || ptr != end) throw bad();
  if (port < 1 || port > 65535) {
    throw input_error({}, what, fmt::format("expected a port in [1, 65535], got \"{}\"", text));
  }
  return {std::move(host), port};
}

}  // namespace pinbench::dist
