// NCCL, loaded at run time (CUDA builds only): libnccl is never linked, so the binary runs
// where there is none, and any NCCL 2 the machine has (the CUDA toolkit's, PyTorch's wheel)
// serves. nccl.h is used for its types only.
#pragma once

#include <string>

#include <nccl.h>

namespace pinbench::collective::nccl {

/// The NCCL calls pinbench makes, resolved with dlsym.
struct library {
  std::string path;     ///< the file dlopen loaded
  std::string version;  ///< "2.27.3"
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitAll) comm_init_all = nullptr;
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;

  /// Throws device_error "CALL failed: NCCL's message (ncclResult N)" unless `status` is success.
  void check(ncclResult_t status, const char* call) const;
};

/// The library, loaded once per process (later calls return the same answer): nullptr when none
/// can be loaded, with why in `reason`. Searched in order: $PINBENCH_NCCL_LIBRARY, the dynamic
/// loader's own search for libnccl.so.2, /usr/local/cuda/lib64, then PyTorch's wheel
/// (nvidia/nccl/lib) under the usual site- and dist-packages folders.
[[nodiscard]] const library* load(std::string* reason);

}  // namespace pinbench::collective::nccl
