// The CUDA backend as a machine without a usable GPU sees it: the probe, the choice of backend,
// and (when built with CUDA) the pure helpers and the error check, none of which needs a device.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"

#ifdef PINBENCH_HAVE_CUDA
#include "device/cuda/check.hpp"
#include "device/cuda/cuda_facts.hpp"
#endif

using namespace pinbench;
using namespace pinbench::device;

TEST_CASE("cuda_availability never throws and explains itself", "[device][cuda]") {
  availability first;
  REQUIRE_NOTHROW(first = cuda_availability());
  const availability second = cuda_availability();
  CHECK(first.usable == second.usable);
  if (!first.usable) {
    CHECK_FALSE(first.reason.empty());
#ifdef PINBENCH_HAVE_CUDA
    // Either the runtime's error, named, or the device count.
    const bool named = first.reason.rfind("cudaError", 0) == 0 || first.reason == "no CUDA device";
    CHECK(named);
#endif
  }
}

TEST_CASE("open_platform: cuda fails as an environment error without a device, auto falls back",
          "[device][cuda]") {
  const availability a = cuda_availability();
  if (a.usable) {
    CHECK(open_platform(backend_choice::cuda).open_home()->name() == "cuda");
    CHECK(open_platform(backend_choice::automatic).open_home()->name() == "cuda");
    return;
  }
  REQUIRE_THROWS_AS(open_platform(backend_choice::cuda).open_home(), environment_error);
  try {
    static_cast<void>(open_platform(backend_choice::cuda).open_home());
  } catch (const environment_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(a.reason));
  }
  const auto fallback = open_platform(backend_choice::automatic).open_home();
  REQUIRE(fallback != nullptr);
  CHECK(fallback->name() == "host");
}

#ifdef PINBENCH_HAVE_CUDA

TEST_CASE("cuda check names file, line and call, and maps out-of-memory", "[device][cuda]") {
  using Catch::Matchers::Equals;
  try {
    cuda::check(cudaErrorMemoryAllocation, "/somewhere/pinbench/lib/device/cuda/x.cpp", 42,
                "cudaMalloc(&p, n)");
    FAIL("no exception");
  } catch (const out_of_memory& e) {
    CHECK_THAT(e.what(), Equals("lib/device/cuda/x.cpp:42: cudaMalloc(&p, n) failed: out of "
                                "memory (cudaErrorMemoryAllocation)"));
  }
  REQUIRE_THROWS_AS(cuda::check(cudaErrorInvalidValue, "x.cpp", 1, "cudaFoo()"), device_error);
  try {
    PINBENCH_CUDA_CHECK(cudaErrorLaunchFailure);
  } catch (const out_of_memory&) {
    FAIL("a launch failure is not out of memory");
  } catch (const device_error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("tests/device/cuda_availability_test.cpp:"));
    CHECK_THAT(what, Catch::Contains("cudaErrorLaunchFailure failed:"));
    CHECK_THAT(what, Catch::EndsWith("(cudaErrorLaunchFailure)"));
  }
  REQUIRE_NOTHROW(cuda::check(cudaSuccess, "x.cpp", 1, "cudaFoo()"));
  CHECK(PINBENCH_CUDA_CHECK_NOTHROW(cudaSuccess));
  // Logs one line to stderr, does not throw.
  CHECK_FALSE(PINBENCH_CUDA_CHECK_NOTHROW(cudaErrorInvalidValue));
}

TEST_CASE("cuda facts: versions and uuid", "[device][cuda]") {
  CHECK(cuda::format_cuda_version(13000) == "13.0");
  CHECK(cuda::format_cuda_version(12040) == "12.4");
  CHECK(cuda::format_cuda_version(11080) == "11.8");
  CHECK(cuda::format_cuda_version(0) == "unknown");

  std::array<unsigned char, 16> uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) uuid[i] = static_cast<unsigned char>(0xa0 + i);
  uuid[0] = 0x0f;
  CHECK(cuda::format_gpu_uuid(uuid) == "GPU-0fa1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

#endif  // PINBENCH_HAVE_CUDA
