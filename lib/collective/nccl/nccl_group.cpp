// NCCL groups: one communicator and one stream per local GPU. A run issues, for each of its
// iterations, every local rank's call between ncclGroupStart and ncclGroupEnd (one thread drives
// several GPUs), all enqueued back to back; then it waits once for each stream, so that it
// returns with every collective complete as on the host. That is nccl-tests' sample: no
// per-collective synchronization or cudaSetDevice to inflate the time of small collectives.
#include "collective/nccl/nccl_group.hpp"

#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::collective::nccl {

namespace {

void cuda_check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw device_error(fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status),
                                   cudaGetErrorName(status)));
}

int device_index(const device::backend& dev) {
  const auto d = dev.describe();
  if (!d.index)
    throw device_error(fmt::format("the {} backend's device has no CUDA index", dev.name()));
  return *d.index;
}

ncclDataType_t nccl_type(dtype t) {
  switch (t) {
    case dtype::float32:
      return ncclFloat32;
    case dtype::float64:
      return ncclFloat64;
    case dtype::int32:
      return ncclInt32;
  }
  return ncclFloat32;
}

// One local rank: its device, communicator and stream, destroyed in reverse.
struct member {
  const library* lib = nullptr;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  member() = default;
  member(const member&) = delete;
  member& operator=(const member&) = delete;
  member(member&& o) noexcept : lib(o.lib), device(o.device), comm(o.comm), stream(o.stream) {
    o.comm = nullptr;
    o.stream = nullptr;
  }
  member& operator=(member&&) = delete;
  ~member() {
    if (cudaSetDevice(device) != cudaSuccess) return;
    if (comm != nullptr) lib->comm_destroy(comm);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  void make_stream() {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
  }
};

class nccl_group final : public group {
 public:
  nccl_group(const library& lib, std::vector<member> members, int world_size, int first_rank,
             std::string what)
      : lib_(lib),
        members_(std::move(members)),
        world_size_(world_size),
        first_rank_(first_rank),
        what_(std::move(what)) {}

  [[nodiscard]] int local_count() const noexcept override {
    return static_cast<int>(members_.size());
  }
  [[nodiscard]] int world_size() const noexcept override { return world_size_; }
  [[nodiscard]] int first_rank() const noexcept override { return first_rank_; }
  [[nodiscard]] std::string describe() const override {
    return fmt::format("NCCL {}, {}", lib_.version, what_);
  }

  [[nodiscard]] std::string iteration_timing() const override {
    return "enqueued back to back and one wait for completion (nccl-tests' method)";
  }
  [[nodiscard]] std::string no_ceiling_reason() const override {
    return "NCCL chooses its transport (PCIe, NVLink, network) itself: not known to pinbench";
  }

  void run_repeated(int iterations, op o, dtype t, const buffer_shape& shape,
                    std::span<const rank_buffers> local, int root) override {
    // Everything that can be refused is refused before ncclGroupStart: a group left open
    // would swallow the next run's calls.
    if (local.size() != members_.size())
      throw device_error(fmt::format("NCCL group of {} local ranks run with {} buffer pairs",
                                     members_.size(), local.size()));
    if (o == op::broadcast && (root < 0 || root >= world_size_))
      throw device_error(fmt::format("broadcast root {} is not a rank of {}", root, world_size_));
    if (iterations < 1)
      throw device_error(fmt::format("an NCCL run needs 1 or more iterations, got {}", iterations));
    if (o == op::send_recv)
      for (const auto& b : local)
        if (b.send == b.recv)
          throw unsupported_error(
              "send_recv in place is not run over NCCL: a rank would overwrite what it sends");

    for (int n = 0; n < iterations; ++n) {
      lib_.check(lib_.group_start(), "ncclGroupStart");
      try {
        for (std::size_t i = 0; i < members_.size(); ++i)
          enqueue(o, t, shape, local[i], first_rank_ + static_cast<int>(i), root, members_[i]);
      } catch (...) {
        lib_.group_end();
        throw;
      }
      lib_.check(lib_.group_end(), "ncclGroupEnd");
    }
    for (auto& m : members_) {
      cuda_check(cudaSetDevice(m.device), "cudaSetDevice");
      cuda_check(cudaStreamSynchronize(m.stream), "cudaStreamSynchronize");
    }
  }

 private:
  void enqueue(op o, dtype t, const buffer_shape& shape, const rank_buffers& b, int rank, int root,
               const member& m) const {
    const auto type = nccl_type(t);
    const std::size_t elem = size_of(t);
    auto* send = static_cast<std::byte*>(b.send);
    auto* recv = static_cast<std::byte*>(b.recv);
    const bool in_place = send == recv;
    const auto at = [&](std::byte* base, std::size_t count) {
      return base + count * elem * static_cast<std::size_t>(rank);
    };
    switch (o) {
      case op::all_reduce:
        lib_.check(lib_.all_reduce(send, recv, shape.send_count, type, ncclSum, m.comm, m.stream),
                   "ncclAllReduce");
        break;
      case op::all_gather:  // in place: this rank's block already lies at its place in recv
        lib_.check(lib_.all_gather(in_place ? at(recv, shape.send_count) : send, recv,
                                   shape.send_count, type, m.comm, m.stream),
                   "ncclAllGather");
        break;
      case op::reduce_scatter:  // in place: the result lands at this rank's block of send
        lib_.check(lib_.reduce_scatter(send, in_place ? at(send, shape.recv_count) : recv,
                                       shape.recv_count, type, ncclSum, m.comm, m.stream),
                   "ncclReduceScatter");
        break;
      case op::broadcast:
        lib_.check(lib_.broadcast(send, recv, shape.send_count, type, root, m.comm, m.stream),
                   "ncclBroadcast");
        break;
      case op::send_recv: {
        const int peer = (rank ^ 1) < world_size_ ? (rank ^ 1) : rank;
        lib_.check(lib_.send(send, shape.send_count, type, peer, m.comm, m.stream), "ncclSend");
        lib_.check(lib_.recv(recv, shape.send_count, type, peer, m.comm, m.stream), "ncclRecv");
        break;
      }
    }
  }

  const library& lib_;
  std::vector<member> members_;
  int world_size_, first_rank_;
  std::string what_;
};

}  // namespace

std::unique_ptr<group> make_local(const library& lib, std::span<device::backend* const> devices) {
  const int n = static_cast<int>(devices.size());
  std::vector<int> indices;
  for (const auto* d : devices) indices.push_back(device_index(*d));
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  lib.check(lib.comm_init_all(comms.data(), n, indices.data()), "ncclCommInitAll");
  std::vector<member> members(devices.size());
  for (std::size_t i = 0; i < members.size(); ++i) {  // owned from here on, even if a stream fails
    members[i].lib = &lib;
    members[i].device = indices[i];
    members[i].comm = comms[i];
  }
  for (auto& m : members) m.make_stream();
  return std::make_unique<nccl_group>(lib, std::move(members), n, 0,
                                      fmt::format("{} GPU{} in one process", n, n == 1 ? "" : "s"));
}

std::unique_ptr<group> make_world(const library& lib, dist::communicator& world,
                                  device::backend& dev) {
  const int rank = world.rank(), size = world.size();
  // Rank 0 makes the id and every rank gets it; an empty one says rank 0 could not.
  std::string id_bytes;
  std::string failure;
  if (rank == 0) {
    ncclUniqueId id{};
    try {
      lib.check(lib.get_unique_id(&id), "ncclGetUniqueId");
      id_bytes.assign(reinterpret_cast<const char*>(&id), sizeof id);
    } catch (const device_error& e) {
      failure = e.what();
    }
  }
  world.broadcast(id_bytes, 0, world_timeout);
  if (!failure.empty()) throw device_error(failure);
  if (id_bytes.size() != sizeof(ncclUniqueId))
    throw device_error("rank 0 could not make an NCCL unique id (ncclGetUniqueId failed there)");
  ncclUniqueId id{};
  std::memcpy(&id, id_bytes.data(), sizeof id);

  std::vector<member> members(1);
  members[0].lib = &lib;
  members[0].device = device_index(dev);
  cuda_check(cudaSetDevice(members[0].device), "cudaSetDevice");
  lib.check(lib.comm_init_rank(&members[0].comm, size, id, rank), "ncclCommInitRank");
  members[0].make_stream();
  return std::make_unique<nccl_group>(
      lib, std::move(members), size, rank,
      fmt::format("one GPU per process, {} process{}", size, size == 1 ? "" : "es"));
}

}  // namespace pinbench::collective::nccl
