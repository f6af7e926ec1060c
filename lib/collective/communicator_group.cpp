// Collectives through the launch's communicator. Its calls take separate send and receive
// buffers (MPI's semantics without MPI_IN_PLACE), so in-place runs go through a scratch buffer
// of this group's own.
#include "collective/communicator_group.hpp"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::collective {

namespace {

dist::element element_of(dtype t) {
  switch (t) {
    case dtype::float32:
      return dist::element::f32;
    case dtype::float64:
      return dist::element::f64;
    case dtype::int32:
      return dist::element::i32;
  }
  return dist::element::f32;
}

class communicator_group final : public group {
 public:
  explicit communicator_group(dist::communicator& world) : world_(world) {}

  [[nodiscard]] int local_count() const noexcept override { return 1; }
  [[nodiscard]] int world_size() const noexcept override { return world_.size(); }
  [[nodiscard]] int first_rank() const noexcept override { return world_.rank(); }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("{} communicator over host memory, {} process{}", world_.transport(),
                       world_.size(), world_.size() == 1 ? "" : "es");
  }

  // Each call through the communicator returns complete: there is nothing to enqueue.
  [[nodiscard]] std::string iteration_timing() const override {
    return "each completed through the communicator before the next";
  }
  [[nodiscard]] std::string no_ceiling_reason() const override {
    return "the communicator moves data through host memory and sockets: no device link";
  }

  void run_repeated(int iterations, op o, dtype t, const buffer_shape& shape,
                    std::span<const rank_buffers> local, int root) override {
    for (int i = 0; i < iterations; ++i) run_one(o, t, shape, local, root);
  }

 private:
  void run_one(op o, dtype t, const buffer_shape& shape, std::span<const rank_buffers> local,
               int root) {
    if (local.size() != 1)
      throw device_error(
          fmt::format("a communicator group runs one rank per process, given {}", local.size()));
    const int rank = world_.rank(), size = world_.size();
    if (o == op::broadcast && (root < 0 || root >= size))
      throw device_error(fmt::format("broadcast root {} is not a rank of {}", root, size));
    const auto e = element_of(t);
    const std::size_t elem = size_of(t);
    auto* send = static_cast<std::byte*>(local[0].send);
    auto* recv = static_cast<std::byte*>(local[0].recv);
    const bool in_place = send == recv;
    const auto limit = world_timeout;

    switch (o) {
      case op::all_reduce: {
        const std::size_t bytes = shape.send_count * elem;
        if (in_place) send = stash(send, bytes);
        world_.all_reduce_sum(send, recv, shape.send_count, e, limit);
        break;
      }
      case op::all_gather: {
        const std::size_t bytes = shape.send_count * elem;
        std::byte* mine = recv + bytes * static_cast<std::size_t>(rank);
        if (in_place || send == mine) send = stash(mine, bytes);
        world_.all_gather_block(send, recv, shape.send_count, e, limit);
        break;
      }
      case op::reduce_scatter: {
        const std::size_t bytes = shape.recv_count * elem;
        if (!in_place) {
          world_.reduce_scatter_sum(send, recv, shape.recv_count, e, limit);
          break;
        }
        std::byte* result = scratch(bytes);
        world_.reduce_scatter_sum(send, result, shape.recv_count, e, limit);
        if (bytes > 0) std::memcpy(send + bytes * static_cast<std::size_t>(rank), result, bytes);
        break;
      }
      case op::broadcast: {
        const std::size_t bytes = shape.send_count * elem;
        if (rank == root && !in_place && bytes > 0) std::memcpy(recv, send, bytes);
        world_.broadcast_block(recv, shape.send_count, e, root, limit);
        break;
      }
      case op::send_recv: {
        const std::size_t bytes = shape.send_count * elem;
        // The odd last rank exchanges with itself, through the communicator all the same: a
        // transport may run the exchange as a collective of every rank.
        const int peer = (rank ^ 1) < size ? (rank ^ 1) : rank;
        if (in_place) send = stash(send, bytes);
        world_.send_recv(send, recv, shape.send_count, e, peer, limit);
        break;
      }
    }
  }

  std::byte* scratch(std::size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }
  // A copy of what this rank sends, so that the receive buffer may be written while it is read.
  std::byte* stash(const std::byte* data, std::size_t bytes) {
    std::byte* s = scratch(bytes);
    if (bytes > 0) std::memcpy(s, data, bytes);
    return s;
  }

  dist::communicator& world_;
  std::vector<std::byte> scratch_;
};

}  // namespace

std::unique_ptr<group> make_communicator_group(dist::communicator& world) {
  return std::make_unique<communicator_group>(world);
}

}  // namespace pinbench::collective
