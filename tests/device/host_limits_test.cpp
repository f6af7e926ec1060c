// The host backend never tries to back more memory than the host has: a terabyte request is an
// out_of_memory error at once, whatever the emulated device's capacity says.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "device/host/host_backend.hpp"
#include "device/host/host_memory.hpp"

using namespace pinbench;
using namespace pinbench::device;

TEST_CASE("host backend: a terabyte is refused before anything is mapped",
          "[device][host][faults]") {
  REQUIRE(host::available_memory_bytes() > 0);
  backend_options options;
  options.host_device_capacity = std::size_t{2} << 40;  // a capacity that allows it
  const auto be = make_host_backend(options);
  const std::size_t tib = std::size_t{1} << 40;
  CHECK_THROWS_AS((void)be->alloc_device(tib), out_of_memory);
  CHECK_THROWS_WITH((void)be->device_malloc(tib),
                    Catch::Contains("cannot map 1 TiB of host memory") &&
                        Catch::Contains("available (MemAvailable)"));
  CHECK_THROWS_AS((void)be->alloc_host(tib, host_kind::pageable), out_of_memory);
  CHECK_THROWS_AS((void)be->alloc_host(tib, host_kind::pinned), out_of_memory);
  // Nothing was kept: the whole capacity is still free.
  CHECK(be->device_memory().free_bytes == options.host_device_capacity);
  // Small allocations are not affected.
  CHECK(be->alloc_device(64_MiB)->bytes() == 64_MiB);
}
