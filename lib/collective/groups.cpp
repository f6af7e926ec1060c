// Which group a set of devices gets: the host ring or the communicator over host memory on the
// host backend, NCCL on CUDA (CUDA builds, with an NCCL library found at run time).
#include <fmt/format.h>

#include "collective/collective.hpp"
#include "collective/communicator_group.hpp"
#include "collective/host_ring.hpp"
#include "core/error.hpp"
#ifdef PINBENCH_HAVE_CUDA
#include "collective/nccl/nccl_group.hpp"
#endif

namespace pinbench::collective {

namespace {

#ifdef PINBENCH_HAVE_CUDA
const nccl::library& nccl_or_throw() {
  std::string why;
  const auto* lib = nccl::load(&why);
  if (lib == nullptr) throw unsupported_error(why);
  return *lib;
}
#endif

[[noreturn]] void no_collectives(std::string_view backend) {
  throw unsupported_error(
      fmt::format("the {} backend has no collectives in this build", backend));
}

}  // namespace

std::unique_ptr<group> make_local_group(std::span<device::backend* const> devices) {
  if (devices.empty()) throw device_error("a group needs at least one device");
  const std::string_view backend = devices.front()->name();
  for (const auto* d : devices)
    if (d->name() != backend)
      throw device_error(fmt::format("one group cannot mix {} and {} devices", backend, d->name()));
  if (backend == "host") return make_host_ring(static_cast<int>(devices.size()));
#ifdef PINBENCH_HAVE_CUDA
  if (backend == "cuda") return nccl::make_local(nccl_or_throw(), devices);
#endif
  no_collectives(backend);
}

std::unique_ptr<group> make_world_group(dist::communicator& world, device::backend& dev) {
  if (dev.name() == "host") return make_communicator_group(world);
#ifdef PINBENCH_HAVE_CUDA
  if (dev.name() == "cuda") return nccl::make_world(nccl_or_throw(), world, dev);
#endif
  no_collectives(dev.name());
}

nccl_status nccl_availability() {
  nccl_status s;
#ifdef PINBENCH_HAVE_CUDA
  if (const auto* lib = nccl::load(&s.reason)) {
    s.usable = true;
    s.library = lib->path;
    s.version = lib->version;
  }
#else
  s.reason = "built without CUDA";
#endif
  return s;
}

}  // namespace pinbench::collective
