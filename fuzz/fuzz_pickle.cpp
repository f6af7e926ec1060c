// libFuzzer entry point of the pickle target; the work is in targets.cpp.
#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return pinbench::fuzz::run_or_abort(pinbench::fuzz::pickle, data, size);
}
