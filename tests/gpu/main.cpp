// The GPU suite's main: when no CUDA device is usable it exits 77, which ctest reports as
// skipped (SKIP_RETURN_CODE), so a machine without a GPU never counts these tests as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string_view>

#include "device/backend.hpp"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]).rfind("--list", 0) == 0) listing = true;
  if (!listing) {
    const auto a = pinbench::device::cuda_availability();
    if (!a.usable) {
      std::printf("skipped: no usable CUDA device: %s\n", a.reason.c_str());
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
