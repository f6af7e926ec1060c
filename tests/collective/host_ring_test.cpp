// The host ring against a plain reference: every op and element type, 1 to 5 ranks, counts
// smaller than the ranks, odd, and larger than a broadcast pipeline chunk, in place and not.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "collective/collective.hpp"
#include "collective/host_ring.hpp"
#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"

namespace pinbench::collective {
namespace {

// Rank r's element i: small integers of both signs, so that every sum is exact in every type.
double input(int rank, std::size_t i) {
  return static_cast<double>(static_cast<int>((static_cast<std::size_t>(rank) * 31 + i * 7) % 13) -
                             5);
}

// The op's result on rank r, element i of its result region, computed the obvious way.
double reference(op o, int n, int r, std::size_t i, const buffer_shape& s, int root) {
  switch (o) {
    case op::all_reduce: {
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += input(q, i);
      return sum;
    }
    case op::all_gather:
      return input(static_cast<int>(i / s.send_count), i % s.send_count);
    case op::reduce_scatter: {
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += input(q, static_cast<std::size_t>(r) * s.recv_count + i);
      return sum;
    }
    case op::broadcast:
      return input(root, i);
    case op::send_recv:
      return input((r ^ 1) < n ? (r ^ 1) : r, i);
  }
  return 0;
}

buffer_shape shape_for(op o, int n, std::size_t count) {
  const auto ranks = static_cast<std::size_t>(n);
  if (o == op::all_gather) return {count, count * ranks};
  if (o == op::reduce_scatter) return {count * ranks, count};
  return {count, count};
}

// Runs `o` once on `ring` with fresh buffers and returns the first wrong element, or "".
template <class T>
std::string run_and_check(group& ring, op o, dtype t, std::size_t count, bool in_place, int root) {
  const int n = ring.world_size();
  const buffer_shape s = shape_for(o, n, count);
  const std::size_t one = std::max(s.send_count, s.recv_count);
  std::vector<std::vector<T>> send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  std::vector<rank_buffers> buffers;
  for (int r = 0; r < n; ++r) {
    auto& sb = send[static_cast<std::size_t>(r)];
    auto& rb = recv[static_cast<std::size_t>(r)];
    if (in_place) {
      sb.assign(one, T(-99));
      // all_gather in place: this rank's block sits at its place in the gathered buffer.
      const std::size_t at = o == op::all_gather ? s.send_count * static_cast<std::size_t>(r) : 0;
      for (std::size_t i = 0; i < s.send_count; ++i) sb[at + i] = static_cast<T>(input(r, i));
      buffers.push_back({sb.data(), sb.data()});
    } else {
      sb.resize(s.send_count);
      for (std::size_t i = 0; i < s.send_count; ++i) sb[i] = static_cast<T>(input(r, i));
      rb.assign(s.recv_count, T(-99));
      buffers.push_back({sb.data(), rb.data()});
    }
  }
  ring.run(o, t, s, buffers, root);
  for (int r = 0; r < n; ++r) {
    const auto& out =
        in_place ? send[static_cast<std::size_t>(r)] : recv[static_cast<std::size_t>(r)];
    // reduce_scatter in place: the result lands at this rank's block.
    const std::size_t at =
        in_place && o == op::reduce_scatter ? s.recv_count * static_cast<std::size_t>(r) : 0;
    for (std::size_t i = 0; i < s.recv_count; ++i) {
      const T want = static_cast<T>(reference(o, n, r, i, s, root));
      if (out[at + i] != want)
        return fmt::format(
            "{} {} n={} count={} in_place={} root={}: rank {} element {}: "
            "expected {}, got {}",
            to_string(o), to_string(t), n, count, in_place, root, r, i, static_cast<double>(want),
            static_cast<double>(out[at + i]));
    }
  }
  return {};
}

std::string run_and_check(group& ring, op o, dtype t, std::size_t count, bool in_place, int root) {
  switch (t) {
    case dtype::float64:
      return run_and_check<double>(ring, o, t, count, in_place, root);
    case dtype::int32:
      return run_and_check<std::int32_t>(ring, o, t, count, in_place, root);
    case dtype::float32:
      break;
  }
  return run_and_check<float>(ring, o, t, count, in_place, root);
}

constexpr op all_ops[] = {op::all_reduce, op::all_gather, op::reduce_scatter, op::broadcast,
                          op::send_recv};
constexpr dtype all_types[] = {dtype::float32, dtype::float64, dtype::int32};

}  // namespace

TEST_CASE("the host ring computes every op like the reference", "[collective][ring]") {
  for (int n = 1; n <= 5; ++n) {
    // One ring per size, reused: its threads and staging persist from one run to the next.
    const auto ring = make_host_ring(n);
    CHECK(ring->world_size() == n);
    CHECK(ring->local_count() == n);
    CHECK(ring->first_rank() == 0);
    for (const op o : all_ops)
      for (const dtype t : all_types)
        for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3},
                                        std::size_t{7}, std::size_t{13}, std::size_t{1001}})
          for (const bool in_place : {false, true}) {
            const int root = o == op::broadcast ? n - 1 : 0;
            const std::string problem = run_and_check(*ring, o, t, count, in_place, root);
            INFO(problem);
            CHECK(problem.empty());
          }
  }
}

TEST_CASE("the host ring pipelines a large broadcast from any root and a large all_reduce",
          "[collective][ring]") {
  const auto ring = make_host_ring(5);
  // 300001 float64 elements: several pipeline chunks of the broadcast, uneven ring chunks.
  for (int root = 0; root < 5; ++root) {
    const std::string problem =
        run_and_check(*ring, op::broadcast, dtype::float64, 300001, root % 2 == 0, root);
    INFO(problem);
    CHECK(problem.empty());
  }
  for (const op o : all_ops) {
    const std::string problem = run_and_check(*ring, o, dtype::float32, 70001, false, 2);
    INFO(problem);
    CHECK(problem.empty());
  }
}

TEST_CASE("the host ring refuses what it cannot run before any thread starts",
          "[collective][ring]") {
  const auto ring = make_host_ring(3);
  std::vector<float> a(4), b(4);
  const std::vector<rank_buffers> two = {{a.data(), b.data()}, {a.data(), b.data()}};
  CHECK_THROWS_AS(ring->run(op::all_reduce, dtype::float32, {4, 4}, two), device_error);
  const std::vector<rank_buffers> three(3, rank_buffers{a.data(), b.data()});
  CHECK_THROWS_AS(ring->run(op::broadcast, dtype::float32, {4, 4}, three, 3), device_error);
  CHECK_THROWS_AS(ring->run(op::all_gather, dtype::float32, {1, 4}, three), device_error);
  CHECK_THROWS_AS(make_host_ring(0), device_error);
  // Still usable afterwards.
  CHECK(run_and_check(*ring, op::all_reduce, dtype::int32, 5, false, 0).empty());
}

TEST_CASE("a local group over host-backend devices is the host ring", "[collective][ring]") {
  std::vector<std::unique_ptr<device::backend>> owned;
  std::vector<device::backend*> devices;
  for (int i = 0; i < 4; ++i) {
    owned.push_back(device::platform::host().open(0));
    devices.push_back(owned.back().get());
  }
  const auto g = make_local_group(devices);
  CHECK(g->describe() == "host ring, 4 threads");
  CHECK(g->local_count() == 4);
  // Device memory of the host backend is host memory: the ring reads and writes it directly.
  std::vector<std::unique_ptr<device::device_buffer>> bufs;
  std::vector<rank_buffers> rb;
  for (auto* d : devices) {
    bufs.push_back(d->alloc_device(8 * sizeof(int)));
    auto* v = reinterpret_cast<int*>(bufs.back()->data());
    for (int i = 0; i < 8; ++i) v[i] = i;
    rb.push_back({v, v});
  }
  g->run(op::all_reduce, dtype::int32, {8, 8}, rb);
  for (const auto& b : bufs)
    for (int i = 0; i < 8; ++i) CHECK(reinterpret_cast<const int*>(b->data())[i] == 4 * i);
}

}  // namespace pinbench::collective

namespace pinbench::collective {

TEST_CASE("a repeated run is that many collectives, one after the other, waited for once",
          "[collective][ring]") {
  // In place, each all_reduce multiplies every element by the ranks: k runs give n^k x.
  const int n = 3, k = 5;
  const auto ring = make_host_ring(n);
  std::vector<std::vector<std::int32_t>> data(n, std::vector<std::int32_t>(10));
  std::vector<rank_buffers> rb;
  for (auto& d : data) {
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::int32_t>(i);
    rb.push_back({d.data(), d.data()});
  }
  ring->run_repeated(k, op::all_reduce, dtype::int32, {10, 10}, rb, 0);
  for (const auto& d : data)
    for (std::size_t i = 0; i < d.size(); ++i) CHECK(d[i] == static_cast<std::int32_t>(i) * 243);
  // Staged send_recv in place, repeated: pairs swap back and forth, an even count restores.
  ring->run_repeated(4, op::send_recv, dtype::int32, {10, 10}, rb, 0);
  for (const auto& d : data) CHECK(d[1] == 243);
  CHECK_THROWS_AS(ring->run_repeated(0, op::all_reduce, dtype::int32, {10, 10}, rb, 0),
                  device_error);
}

}  // namespace pinbench::collective
