#include "skip.hpp"

#include <catch2/catch.hpp>

#include <atomic>

namespace pinbench::testing {
namespace {
std::atomic<int> skipped{0};
}

void skip_case(const std::string& why) {
  skipped.fetch_add(1);
  WARN("skipped: " << why);
}

int skipped_cases() {
  return skipped.load();
}

}  // namespace pinbench::testing
