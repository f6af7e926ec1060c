// Choosing a backend by name, and the names of host memory kinds.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"

using namespace pinbench;
using namespace pinbench::device;

TEST_CASE("a platform opens the host backend by choice and as the fallback of auto", "[device]") {
  backend_options options;
  options.host_device_capacity = 16u << 20;
  CHECK(platform::host(options).open(0)->kind() == platform_kind::host);

  const auto cuda = cuda_availability();
  const auto automatic = open_platform(backend_choice::automatic, options);
  if (cuda.usable) {
    CHECK(automatic.open_home()->kind() == platform_kind::cuda);
  } else {
    CHECK_FALSE(cuda.reason.empty());
    CHECK(automatic.open_home()->kind() == platform_kind::host);
    CHECK_THROWS_AS(open_platform(backend_choice::cuda, options), environment_error);
  }
}

TEST_CASE("backend names: one table for --backend, results and messages", "[device]") {
  CHECK(backend_choice_names() == std::vector<std::string>{"auto", "cuda", "host"});
  for (const auto kind : {platform_kind::host, platform_kind::cuda})
    CHECK(parse_platform_kind(to_string(kind)) == kind);
  CHECK_FALSE(parse_platform_kind("tpu"));
  CHECK_FALSE(parse_platform_kind("auto"));
  CHECK(parse_backend_choice("auto") == backend_choice::automatic);
  CHECK(parse_backend_choice("cuda") == backend_choice::cuda);
  CHECK(parse_backend_choice("host") == backend_choice::host);
  CHECK_FALSE(parse_backend_choice("tpu"));
}

TEST_CASE("host memory kinds have their scenario names", "[device]") {
  CHECK(to_string(host_kind::pageable) == "pageable");
  CHECK(to_string(host_kind::pinned) == "pinned");
  CHECK(to_string(host_kind::pinned_wc) == "pinned_wc");
  CHECK(to_string(host_kind::registered) == "registered");
}
