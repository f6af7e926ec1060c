// Run under mpirun by tests/dist_probe/run_under_mpirun.sh: connects through the MPI plugin and
//   ops   checks every call's values against a reference on every rank; rank 0 prints
//         "mpi_probe: OK"
//   dies  rank 1 exits (_exit(9)) after the first barrier; the others wait in a long barrier
//         that mpirun must end
//   hangs rank 1 sleeps after the first barrier; the others' 3 s barrier must throw
//         rank_lost_error, which they print before abort() ends the launch
// mpi_probe MODE [PLUGIN]: PLUGIN is set as PINBENCH_MPI_PLUGIN (the probe is not beside it).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/launch.hpp"

using namespace pinbench::dist;
using namespace std::chrono_literals;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "mpi_probe: rank %d: wrong %s\n", rank, what.c_str());
  ++failures;
}

template <typename T>
T value(int r, std::size_t i) {
  return static_cast<T>(static_cast<int>(i % 1000) * 10 + r + 1);
}

template <typename T>
void check_typed(communicator& world, element e, std::size_t count) {
  const int size = world.size();
  const int me = world.rank();
  const auto n = static_cast<std::size_t>(size);
  const std::string at =
      " (" + std::to_string(count) + " elements of size " + std::to_string(size_of(e)) + ")";

  std::vector<T> send(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = value<T>(me, i);
  std::vector<T> recv(count);
  world.all_reduce_sum(send.data(), recv.data(), count, e, 10s);
  bool ok = true;
  for (std::size_t i = 0; i < count; ++i) {
    T want{};
    for (int r = 0; r < size; ++r) want += value<T>(r, i);
    ok = ok && recv[i] == want;
  }
  expect(ok, "all_reduce_sum" + at, me);

  std::vector<T> in_place = send;
  world.all_reduce_sum(in_place.data(), in_place.data(), count, e, 10s);
  expect(in_place == recv, "all_reduce_sum in place" + at, me);

  std::vector<T> gathered(count * n);
  world.all_gather_block(send.data(), gathered.data(), count, e, 10s);
  ok = true;
  for (std::size_t j = 0; j < gathered.size(); ++j) {
    ok = ok && gathered[j] == value<T>(static_cast<int>(j / (count ? count : 1)), j % count);
  }
  expect(ok, "all_gather_block" + at, me);

  std::vector<T> whole(count * n);
  for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = value<T>(me, i);
  std::vector<T> block(count);
  world.reduce_scatter_sum(whole.data(), block.data(), count, e, 10s);
  ok = true;
  for (std::size_t i = 0; i < count; ++i) {
    T want{};
    for (int r = 0; r < size; ++r) want += value<T>(r, static_cast<std::size_t>(me) * count + i);
    ok = ok && block[i] == want;
  }
  expect(ok, "reduce_scatter_sum" + at, me);

  for (int root = 0; root < size; ++root) {
    std::vector<T> data(count);
    for (std::size_t i = 0; i < count; ++i) data[i] = me == root ? value<T>(root, i) : T{};
    world.broadcast_block(data.data(), count, e, root, 10s);
    ok = true;
    for (std::size_t i = 0; i < count; ++i) ok = ok && data[i] == value<T>(root, i);
    expect(ok, "broadcast_block from " + std::to_string(root) + at, me);
  }

  const int peer = (me ^ 1) < size ? (me ^ 1) : me;
  std::vector<T> from_peer(count);
  world.send_recv(send.data(), from_peer.data(), count, e, peer, 10s);
  ok = true;
  for (std::size_t i = 0; i < count; ++i) ok = ok && from_peer[i] == value<T>(peer, i);
  expect(ok, "send_recv" + at, me);
}

int check_ops(communicator& world) {
  const int me = world.rank();
  world.barrier(10s);
  std::string mine(static_cast<std::size_t>(me) * 1000 + 3, static_cast<char>('a' + me));
  auto all = world.all_gather(mine, 10s);
  bool ok = all.size() == static_cast<std::size_t>(world.size());
  for (std::size_t r = 0; ok && r < all.size(); ++r) {
    ok = all[r] == std::string(r * 1000 + 3, static_cast<char>('a' + r));
  }
  expect(ok, "all_gather", me);
  for (int root = 0; root < world.size(); ++root) {
    std::string data = me == root ? std::string(5000, 'x') + std::to_string(root) : "junk";
    world.broadcast(data, root, 10s);
    expect(data == std::string(5000, 'x') + std::to_string(root), "broadcast", me);
  }
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{300000}}) {
    check_typed<float>(world, element::f32, count);
    check_typed<double>(world, element::f64, count);
    check_typed<std::int32_t>(world, element::i32, count);
  }
  // Every rank's verdict, so that rank 0 speaks for all.
  int bad = failures > 0 ? 1 : 0;
  int bad_ranks = 0;
  world.all_reduce_sum(&bad, &bad_ranks, 1, element::i32, 10s);
  world.barrier(10s);
  if (me == 0) std::printf(bad_ranks == 0 ? "mpi_probe: OK\n" : "mpi_probe: FAILED\n");
  return bad_ranks == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_probe ops|dies|hangs [PLUGIN]\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (argc > 2) ::setenv("PINBENCH_MPI_PLUGIN", argv[2], 1);
  try {
    auto launch = detect_launch();
    if (launch.launcher != launcher_kind::mpirun || launch.size < 2) {
      std::fprintf(stderr, "mpi_probe: run me under mpirun with 2 ranks or more\n");
      return 2;
    }
    auto world = connect(launch, 30s);
    if (world->transport() != "mpi") {
      std::fprintf(stderr, "mpi_probe: transport %s, not mpi\n",
                   std::string(world->transport()).c_str());
      return 1;
    }
    if (mode == "ops") return check_ops(*world);
    world->barrier(10s);
    if (mode == "dies") {
      if (world->rank() == 1) ::_exit(9);
      world->barrier(120s);  // mpirun ends this rank long before
      std::fprintf(stderr, "mpi_probe: rank %d: the barrier returned\n", world->rank());
      return 1;
    }
    if (mode == "hangs") {
      if (world->rank() == 1) {
        std::this_thread::sleep_for(60s);
        return 0;
      }
      try {
        world->barrier(3s);
      } catch (const rank_lost_error& e) {
        // As pinbench run does: say why, then end every rank (the sleeping one too).
        std::printf("rank_lost_error: %s\n", e.what());
        std::fflush(stdout);
        world->abort(4, "mpi_probe: aborting the launch");
      }
      std::fprintf(stderr, "mpi_probe: rank %d: the barrier returned\n", world->rank());
      return 1;
    }
    std::fprintf(stderr, "mpi_probe: unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const rank_lost_error& e) {
    std::printf("rank_lost_error: %s\n", e.what());
    std::fflush(stdout);
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_probe: %s\n", e.what());
    return 3;
  }
}
