// Groups that run through NCCL (CUDA builds only): this process's GPUs (ncclCommInitAll), or
// one GPU per process of the launch (ncclCommInitRank, bootstrapped through the communicator).
#pragma once

#include <memory>
#include <span>

#include "collective/collective.hpp"
#include "collective/nccl/nccl_library.hpp"
#include "device/backend.hpp"
#include "dist/communicator.hpp"

namespace pinbench::collective::nccl {

[[nodiscard]] std::unique_ptr<group> make_local(const library& lib,
                                                std::span<device::backend* const> devices);

[[nodiscard]] std::unique_ptr<group> make_world(const library& lib, dist::communicator& world,
                                                device::backend& dev);

}  // namespace pinbench::collective::nccl
