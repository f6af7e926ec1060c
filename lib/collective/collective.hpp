// Collectives as NCCL runs them, and the figures nccl-tests reports for them. A `group` is N
// participants that run one collective together: the host ring (threads over emulated devices),
// NCCL over this process's GPUs or one GPU per process, or the launch's communicator over host
// memory. Kinds `collective` and `data_parallel` measure through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "device/backend.hpp"
#include "dist/communicator.hpp"

namespace pinbench::collective {

enum class op { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };
enum class dtype { float32, float64, int32 };

[[nodiscard]] std::string_view to_string(op o) noexcept;
[[nodiscard]] std::optional<op> op_from(std::string_view name) noexcept;
[[nodiscard]] std::string_view to_string(dtype t) noexcept;
[[nodiscard]] std::optional<dtype> dtype_from(std::string_view name) noexcept;
[[nodiscard]] std::size_t size_of(dtype t) noexcept;

/// nccl-tests' bus-bandwidth factor: busbw = algbw * bus_factor(op, ranks). all_reduce
/// 2(n-1)/n; all_gather and reduce_scatter (n-1)/n; broadcast and send_recv 1.
[[nodiscard]] double bus_factor(op o, int ranks) noexcept;

/// Elements in each participant's send and receive buffer for a collective whose size is
/// `bytes` as nccl-tests counts it (the larger of the two buffers), rounded down to whole
/// elements (and, for all_gather and reduce_scatter, to a multiple of `ranks` blocks).
struct buffer_shape {
  std::size_t send_count = 0, recv_count = 0;
  [[nodiscard]] std::uint64_t bytes(dtype t) const noexcept;  ///< the larger buffer, in bytes
};
[[nodiscard]] buffer_shape shape_of(op o, dtype t, std::uint64_t bytes, int ranks) noexcept;

/// One participant's buffers, in the memory of its device. send == recv runs in place, laid out
/// as NCCL's in-place forms are: all_gather's buffer holds recv_count elements with this rank's
/// own block already at block `rank`; reduce_scatter's holds send_count elements and the result
/// lands at block `rank`. NCCL has no in-place send_recv: it throws unsupported_error there.
struct rank_buffers {
  void* send = nullptr;
  void* recv = nullptr;
};

class group {
 public:
  virtual ~group() = default;
  [[nodiscard]] virtual int local_count() const noexcept = 0;  ///< participants this process drives
  [[nodiscard]] virtual int world_size() const noexcept = 0;   ///< participants in all
  [[nodiscard]] virtual int first_rank() const noexcept = 0;  ///< world rank of local participant 0
  /// "host ring, 4 threads", "NCCL 2.27.3, 8 GPUs in one process", "MPI over host memory".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// How run_repeated's iterations run, for the case's `timing`: "enqueued back to back and one
  /// wait for completion (nccl-tests' method)", or "each completed before the next".
  [[nodiscard]] virtual std::string iteration_timing() const = 0;
  /// Why no link ceiling can be put beside busbw: the link the data crosses is not one pinbench
  /// can read (NCCL picks PCIe, NVLink or the network itself; host memory has no link).
  [[nodiscard]] virtual std::string no_ceiling_reason() const = 0;
  /// Runs `o` on every local participant (`local.size() == local_count()`) and returns once all
  /// completed. broadcast: from world rank `root`; send_recv: ranks exchange in pairs (0<->1,
  /// 2<->3, ...; an odd last rank sends to itself). Throws device_error for a failure.
  void run(op o, dtype t, const buffer_shape& shape, std::span<const rank_buffers> local,
           int root = 0) {
    run_repeated(1, o, t, shape, local, root);
  }
  /// As run, `iterations` (>= 1) times back to back, waiting once after the last: one sample
  /// as nccl-tests takes it. NCCL enqueues every collective on its streams and synchronizes
  /// once; the host ring's threads run them all before waking the caller.
  virtual void run_repeated(int iterations, op o, dtype t, const buffer_shape& shape,
                            std::span<const rank_buffers> local, int root) = 0;
};

/// One participant per device, all driven by this process: the host ring over host-backend
/// devices, NCCL (ncclCommInitAll) over CUDA ones. Throws unsupported_error, with why, when the
/// backend's collectives cannot be had here (no NCCL library).
[[nodiscard]] std::unique_ptr<group> make_local_group(std::span<device::backend* const> devices);

/// How long one call through the launch's communicator may wait for the other ranks (a
/// collective of the largest sizes over a slow transport, a rank still setting up): generous,
/// yet a lost rank ends the case instead of hanging the run.
inline constexpr dist::timeout world_timeout{60'000};

/// One participant per process of the launch, `dev` being this process's device: the
/// communicator's own collectives over host memory on the host backend, NCCL bootstrapped
/// through the communicator (ncclGetUniqueId on rank 0, broadcast, ncclCommInitRank) on CUDA.
[[nodiscard]] std::unique_ptr<group> make_world_group(dist::communicator& world,
                                                      device::backend& dev);

/// The NCCL library this process would load (path and version), or why none can be: for
/// `pinbench info` and the reason of a skipped case. "built without CUDA" in a host-only build.
struct nccl_status {
  bool usable = false;
  std::string library;  ///< the path dlopen found, when usable
  std::string version;  ///< "2.27.3", when usable
  std::string reason;   ///< why not, when not usable
};
[[nodiscard]] nccl_status nccl_availability();

}  // namespace pinbench::collective
