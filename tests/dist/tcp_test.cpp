// The tcp communicator with threads as ranks, in one process, on the loopback.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/tcp.hpp"
#include "support.hpp"

using namespace pinbench::dist;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using pinbench::testing::free_loopback_port;

namespace {

// Catch2's assertions are not thread-safe: rank threads throw this instead, and the test's
// own thread asserts on what each rank ended with.
struct mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void ensure(bool ok, const std::string& what) {
  if (!ok) throw mismatch("wrong " + what);
}

struct outcome {
  std::exception_ptr error;
  std::string message;  ///< what() of a pinbench::error
  bool lost = false;    ///< it was a rank_lost_error
  double seconds = 0;   ///< from the start of `body` to its end
};

// Runs `body` on `size` threads, each a rank connected through connect_tcp; rank 0 starts last
// so that the others' retries are exercised. The communicator dies with the thread's body.
std::vector<outcome> run_ranks(int size, const std::function<void(communicator&)>& body,
                               timeout connect_limit = 10s) {
  // A port nobody listens on now (the kernel's choice; rank 0 binds it again with SO_REUSEADDR).
  const int port = free_loopback_port();
  std::vector<outcome> outcomes(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = size - 1; r >= 0; --r) {
    threads.emplace_back([&, r] {
      auto& out = outcomes[static_cast<std::size_t>(r)];
      steady::time_point start{};
      try {
        auto world = connect_tcp(r, size, "127.0.0.1", port, connect_limit);
        start = steady::now();
        body(*world);
      } catch (const rank_lost_error& e) {
        out.lost = true;
        out.message = e.what();
        out.error = std::current_exception();
      } catch (const pinbench::error& e) {
        out.message = e.what();
        out.error = std::current_exception();
      } catch (const std::exception& e) {
        out.message = e.what();
        out.error = std::current_exception();
      }
      if (start != steady::time_point{}) {
        out.seconds = std::chrono::duration<double>(steady::now() - start).count();
      }
    });
    if (r == size - 1) std::this_thread::sleep_for(100ms);
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

void require_all_passed(const std::vector<outcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    REQUIRE_FALSE(outcomes[r].error);
  }
}

// What rank r holds in element i of a collective's input: distinct per rank and element, and
// exact in f32 once summed over a few ranks.
template <typename T>
T value(int r, std::size_t i) {
  return static_cast<T>(static_cast<int>(i % 1000) * 10 + r + 1);
}

template <typename T>
void check_typed_collectives(communicator& world, element e, std::size_t count) {
  const int size = world.size();
  const int me = world.rank();
  const auto n = static_cast<std::size_t>(size);

  std::vector<T> send(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = value<T>(me, i);
  std::vector<T> recv(count);
  world.all_reduce_sum(send.data(), recv.data(), count, e, 5s);
  bool ok = true;  // one assertion per call, not per element
  for (std::size_t i = 0; i < count; ++i) {
    T want{};
    for (int r = 0; r < size; ++r) want += value<T>(r, i);
    ok = ok && recv[i] == want;
  }
  ensure(ok, "all_reduce_sum (" + std::to_string(count) + " elements)");

  std::vector<T> gathered(count * n);
  world.all_gather_block(send.data(), gathered.data(), count, e, 5s);
  for (int r = 0; r < size; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      ok = ok && gathered[static_cast<std::size_t>(r) * count + i] == value<T>(r, i);
    }
  }
  ensure(ok, "all_gather_block (" + std::to_string(count) + " elements)");

  std::vector<T> whole(count * n);
  for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = value<T>(me, i);
  std::vector<T> block(count);
  world.reduce_scatter_sum(whole.data(), block.data(), count, e, 5s);
  for (std::size_t i = 0; i < count; ++i) {
    T want{};
    for (int r = 0; r < size; ++r) want += value<T>(r, static_cast<std::size_t>(me) * count + i);
    ok = ok && block[i] == want;
  }
  ensure(ok, "reduce_scatter_sum (" + std::to_string(count) + " elements)");

  const int root = size - 1;
  std::vector<T> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = me == root ? value<T>(root, i) : T{};
  world.broadcast_block(data.data(), count, e, root, 5s);
  for (std::size_t i = 0; i < count; ++i) ok = ok && data[i] == value<T>(root, i);
  ensure(ok, "broadcast_block (" + std::to_string(count) + " elements)");

  // Pairs (0,1), (2,3)...; an odd last rank exchanges with itself.
  const int peer = (me ^ 1) < size ? (me ^ 1) : me;
  std::vector<T> from_peer(count);
  world.send_recv(send.data(), from_peer.data(), count, e, peer, 5s);
  for (std::size_t i = 0; i < count; ++i) ok = ok && from_peer[i] == value<T>(peer, i);
  ensure(ok, "send_recv (" + std::to_string(count) + " elements)");
}

}  // namespace

TEST_CASE("tcp: every call gives what MPI's would", "[dist][tcp]") {
  const int size = GENERATE(1, 2, 3, 5);
  auto outcomes = run_ranks(size, [](communicator& world) {
    ensure(world.transport() == "tcp", "transport");
    world.barrier(5s);

    // Lengths differ by rank, one of them empty.
    const int me = world.rank();
    std::string mine(static_cast<std::size_t>(me * 1000), static_cast<char>('a' + me));
    auto all = world.all_gather(mine, 5s);
    ensure(all.size() == static_cast<std::size_t>(world.size()), "all_gather count");
    for (int r = 0; r < world.size(); ++r) {
      ensure(all[static_cast<std::size_t>(r)] ==
                 std::string(static_cast<std::size_t>(r * 1000), static_cast<char>('a' + r)),
             "all_gather");
    }

    for (int root = 0; root < world.size(); ++root) {
      std::string data = me == root ? "from " + std::to_string(root) : "junk";
      world.broadcast(data, root, 5s);
      ensure(data == "from " + std::to_string(root), "broadcast");
    }

    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{40000}}) {
      check_typed_collectives<float>(world, element::f32, count);
      check_typed_collectives<double>(world, element::f64, count);
      check_typed_collectives<std::int32_t>(world, element::i32, count);
    }

    // In place, as MPI_IN_PLACE would.
    std::vector<double> x(3, me + 1.0);
    world.all_reduce_sum(x.data(), x.data(), x.size(), element::f64, 5s);
    ensure(x[2] == world.size() * (world.size() + 1) / 2.0, "all_reduce_sum in place");
    world.barrier(5s);
  });
  require_all_passed(outcomes);
}

TEST_CASE("tcp: large messages in both directions", "[dist][tcp]") {
  auto outcomes = run_ranks(3, [](communicator& world) {
    const std::size_t count = 1u << 20;  // 4 MiB of f32 per rank: many socket buffers full
    std::vector<float> send(count, static_cast<float>(world.rank() + 1));
    std::vector<float> all(count * 3);
    world.all_gather_block(send.data(), all.data(), count, element::f32, 20s);
    ensure(all.front() == 1.0f && all[count] == 2.0f && all.back() == 3.0f, "all_gather_block");
  });
  require_all_passed(outcomes);
}

TEST_CASE("tcp: a rank that closes early is reported at once", "[dist][tcp]") {
  const int quitter = GENERATE(0, 1, 3);
  auto outcomes = run_ranks(4, [quitter](communicator& world) {
    world.barrier(5s);
    if (world.rank() == quitter) return;  // its communicator closes with it
    world.barrier(30s);
  });
  for (int r = 0; r < 4; ++r) {
    const auto& out = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << out.message);
    if (r == quitter) {
      CHECK_FALSE(out.error);
      continue;
    }
    CHECK(out.lost);
    CHECK(out.seconds < 5.0);  // far from the 30 s limit
    CHECK_THAT(out.message, Catch::Matchers::Contains("closed its connection"));
  }
  // Rank 0 names the rank that left (the others only see rank 0 go).
  if (quitter != 0) {
    CHECK_THAT(outcomes[0].message,
               Catch::Matchers::Contains("rank " + std::to_string(quitter) + " closed"));
  }
}

TEST_CASE("tcp: a silent rank makes the others time out within the limit", "[dist][tcp]") {
  auto outcomes = run_ranks(3, [](communicator& world) {
    world.barrier(5s);
    if (world.rank() == 2) {
      std::this_thread::sleep_for(2500ms);  // alive, connected, and saying nothing
      return;
    }
    world.all_reduce_sum(nullptr, nullptr, 0, element::f32, 500ms);
  });
  const auto& root = outcomes[0];
  INFO(root.message);
  CHECK(root.lost);
  CHECK_THAT(root.message, Catch::Matchers::Contains("rank 0: no answer from rank 2 within 0.5 s"));
  CHECK(root.seconds >= 0.45);
  CHECK(root.seconds < 2.4);  // before rank 2 wakes and closes
  const auto& other = outcomes[1];
  INFO(other.message);
  CHECK(other.lost);
  CHECK(other.seconds < 2.4);
}

TEST_CASE("tcp: a rank that never connects is named", "[dist][tcp]") {
  const int port = free_loopback_port();
  auto start = steady::now();
  std::string message;
  std::thread one([&] {
    try {
      auto world = connect_tcp(1, 3, "127.0.0.1", port, 800ms);
      // Rank 0 gives up on rank 2, closing rank 1's connection on the way.
      world->barrier(800ms);
    } catch (const std::exception&) {
    }
  });
  try {
    (void)connect_tcp(0, 3, "127.0.0.1", port, 800ms);
  } catch (const rank_lost_error& e) {
    message = e.what();
  }
  one.join();
  CHECK_THAT(message, Catch::Matchers::Contains("rank 0: rank 2 did not connect"));
  CHECK(std::chrono::duration<double>(steady::now() - start).count() < 3.0);

  // And rank 0 that never listens: the others give up within their limit.
  start = steady::now();
  CHECK_THROWS_AS(connect_tcp(1, 2, "127.0.0.1", free_loopback_port(), 300ms), rank_lost_error);
  CHECK(std::chrono::duration<double>(steady::now() - start).count() < 2.0);
}

TEST_CASE("tcp: a rank of another launch on the same port is turned away", "[dist][tcp]") {
  // Two srun steps whose derived ports coincide: rank 1 of launch 2 reaches launch 1's rank 0,
  // which drops it (it hears so at once) and goes on waiting for its own rank 1.
  const int port = free_loopback_port();
  std::string stranger, own;
  std::thread other([&] {
    try {
      (void)connect_tcp(1, 2, "127.0.0.1", port, 5s, 2);
    } catch (const rank_lost_error& e) {
      stranger = e.what();
    }
    try {
      connect_tcp(1, 2, "127.0.0.1", port, 5s, 1)->barrier(5s);
    } catch (const std::exception& e) {
      own = e.what();
    }
  });
  auto world = connect_tcp(0, 2, "127.0.0.1", port, 5s, 1);
  world->barrier(5s);
  other.join();
  CHECK_THAT(stranger, Catch::Matchers::Contains("another launch's"));
  CHECK(own.empty());
}

TEST_CASE("tcp: calls out of step are an error, not a hang", "[dist][tcp]") {
  auto outcomes = run_ranks(2, [](communicator& world) {
    if (world.rank() == 0) {
      world.barrier(2s);
    } else {
      std::string data = "x";
      world.broadcast(data, 0, 2s);
    }
  });
  CHECK_THAT(outcomes[0].message, Catch::Matchers::Contains("out of step"));
  CHECK(outcomes[1].error);
}

TEST_CASE("rendezvous addresses parse as host:port", "[dist][tcp]") {
  CHECK(parse_host_port("node1:29501", "x").host == "node1");
  CHECK(parse_host_port("node1:29501", "x").port == 29501);
  CHECK(parse_host_port("[::1]:80", "x").host == "::1");
  CHECK_THROWS_WITH(parse_host_port("node1", "environment PINBENCH_RENDEZVOUS"),
                    "environment PINBENCH_RENDEZVOUS: expected host:port, got \"node1\"");
  CHECK_THROWS_AS(parse_host_port("node1:", "x"), pinbench::input_error);
  CHECK_THROWS_AS(parse_host_port(":80", "x"), pinbench::input_error);
  CHECK_THROWS_AS(parse_host_port("node1:80x", "x"), pinbench::input_error);
  CHECK_THROWS_WITH(parse_host_port("node1:70000", "x"),
                    "x: expected a port in [1, 65535], got \"node1:70000\"");
}
