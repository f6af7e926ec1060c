// Choosing a backend by name, and the names of host memory kinds.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "device/backend.hpp"

using namespace pinbench;
using namespace pinbench::device;

TEST_CASE("make_backend picks the host backend by name and as the fallback of auto", "[device]") {
  backend_options options;
  options.host_device_capacity = 16u << 20;
  CHECK(make_backend("host", options)->name() == "host");

  const auto cuda = cuda_availability();
  if (cuda.usable) {
    CHECK(make_backend("auto", options)->name() == "cuda");
  } else {
    CHECK_FALSE(cuda.reason.empty());
    CHECK(make_backend("auto", options)->name() == "host");
    CHECK_THROWS_AS(make_backend("cuda", options), environment_error);
  }
  CHECK_THROWS_AS(make_backend("tpu", options), input_error);
}

TEST_CASE("host memory kinds have their scenario names", "[device]") {
  CHECK(to_string(host_kind::pageable) == "pageable");
  CHECK(to_string(host_kind::pinned) == "pinned");
  CHECK(to_string(host_kind::pinned_wc) == "pinned_wc");
  CHECK(to_string(host_kind::registered) == "registered");
}
