// The group over the launch's communicator: one rank per process, here one per thread of a
// world inside the test process, and the single process's communicator.
#include <catch2/catch.hpp>

#include <array>

#include <thread>
#include <vector>

#include "collective/collective.hpp"
#include "collective/thread_world.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"

namespace pinbench::collective {
namespace {

// Each rank of an n-thread world runs `o` on its own buffers; returns each rank's result.
std::vector<std::vector<float>> run_world(int n, op o, std::size_t count, bool in_place,
                                          int root = 0) {
  testing::thread_world world(n);
  const auto ranks = static_cast<std::size_t>(n);
  buffer_shape s{count, count};
  if (o == op::all_gather) s = {count, count * ranks};
  if (o == op::reduce_scatter) s = {count * ranks, count};
  std::vector<std::vector<float>> out(ranks);
  // Catch's assertions are not thread-safe: each rank notes what it saw, the test thread checks.
  std::vector<std::array<int, 3>> seen(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      testing::thread_world::comm c(world, r);
      auto dev = device::platform::host().open(0);
      const auto g = make_world_group(c, *dev);
      seen[static_cast<std::size_t>(r)] = {g->world_size(), g->local_count(), g->first_rank()};
      const std::size_t one = std::max(s.send_count, s.recv_count);
      std::vector<float> send(in_place ? one : s.send_count, -1.0f), recv(s.recv_count, -1.0f);
      const std::size_t at =
          in_place && o == op::all_gather ? s.send_count * static_cast<std::size_t>(r) : 0;
      for (std::size_t i = 0; i < s.send_count; ++i)
        send[at + i] = static_cast<float>((r + 1) * 10 + static_cast<int>(i));
      const std::vector<rank_buffers> mine = {{send.data(), in_place ? send.data() : recv.data()}};
      g->run(o, dtype::float32, s, mine, root);
      out[static_cast<std::size_t>(r)] = in_place ? send : recv;
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    CHECK(seen[static_cast<std::size_t>(r)] == std::array<int, 3>{n, 1, r});
  return out;
}

}  // namespace

TEST_CASE("the communicator group runs every op through the launch's communicator",
          "[collective][world]") {
  for (const bool in_place : {false, true}) {
    INFO("in_place " << in_place);
    // all_reduce over 3 ranks: (10 + 20 + 30) + 3i
    auto out = run_world(3, op::all_reduce, 4, in_place);
    for (const auto& v : out)
      for (std::size_t i = 0; i < 4; ++i) CHECK(v[i] == static_cast<float>(60 + 3 * i));

    out = run_world(3, op::all_gather, 2, in_place);
    for (const auto& v : out) CHECK(v == std::vector<float>{10, 11, 20, 21, 30, 31});

    // reduce_scatter: rank r gets elements [2r, 2r+2) of the sum; in place at block r.
    out = run_world(3, op::reduce_scatter, 2, in_place);
    for (std::size_t r = 0; r < 3; ++r) {
      const std::size_t at = in_place ? 2 * r : 0;
      CHECK(out[r][at] == static_cast<float>(60 + 3 * (2 * r)));
      CHECK(out[r][at + 1] == static_cast<float>(60 + 3 * (2 * r + 1)));
    }

    out = run_world(3, op::broadcast, 3, in_place, 2);
    for (const auto& v : out) CHECK(v == std::vector<float>{30, 31, 32});

    // send_recv: 0<->1, and rank 2 (odd last) to itself.
    out = run_world(3, op::send_recv, 2, in_place);
    CHECK(out[0] == std::vector<float>{20, 21});
    CHECK(out[1] == std::vector<float>{10, 11});
    CHECK(out[2] == std::vector<float>{30, 31});
  }
}

TEST_CASE("the communicator group describes the launch", "[collective][world]") {
  testing::thread_world world(1);
  testing::thread_world::comm c(world, 0);
  auto dev = device::platform::host().open(0);
  const auto g = make_world_group(c, *dev);
  CHECK(g->describe() == "threads communicator over host memory, 1 process");
}

}  // namespace pinbench::collective
