#include "skip.hpp"

#include <catch2/catch.hpp>

namespace pinbench::testing {
namespace {
int skipped = 0;  // Catch runs the cases of a process one after another
}

void skip_case(const std::string& why) {
  ++skipped;
  WARN("skipped: " << why);
}

int skipped_cases() {
  return skipped;
}

}  // namespace pinbench::testing
