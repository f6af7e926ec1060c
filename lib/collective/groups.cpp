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
  throw unsupported_error(fmt::format("the {} backend has no collectives in this build", backend));
}

}  // namespace

std::unique_ptr<group> make_local_group(std::span<device::backend* const> devices) {
  if (devices.empty()) throw device_error("a group needs at least one device");
  const device::platform_kind kind = devices.front()->kind();
  for (const auto* d : devices)
    if (d->kind() != kind)
      throw device_error(fmt::format("one group cannot mix {} and {} devices",
                                     devices.front()->name(), d->name()));
  switch (kind) {
    case device::platform_kind::host:
      return make_host_ring(static_cast<int>(devices.size()));
    case device::platform_kind::cuda:
#ifdef PINBENCH_HAVE_CUDA
      return nccl::make_local(nccl_or_throw(), devices);
#else
      break;
#endif
  }
  no_collectives(devices.front()->name());
}

std::unique_ptr<group> make_world_group(dist::communicator& world, device::backend& dev) {
  switch (dev.kind()) {
    case device::platform_kind::host:
      return make_communicator_group(world);
    case device::platform_kind::cuda:
#ifdef PINBENCH_HAVE_CUDA
      return nccl::make_world(nccl_or_throw(), world, dev);
#else
      break;
#endif
  }
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
