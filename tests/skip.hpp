// A test case that cannot check what it exists to check here (no chromium, no prlimit, a
// sandbox that refuses a mount) says so with skip_case() and returns: ctest then reports it as
// skipped, never as passed. ctest runs one case per process with PINBENCH_ONE_CASE=1 set
// (tests/CMakeLists.txt); main.cpp turns a run whose cases passed but skipped into exit 77,
// ctest's SKIP_RETURN_CODE. Run by hand, with many cases in one process, the skip is a warning.
#pragma once

#include <string>

namespace pinbench::testing {

/// Marks the running case as skipped, with why (printed as a Catch warning).
void skip_case(const std::string& why);
/// How many cases of this process called skip_case().
int skipped_cases();

}  // namespace pinbench::testing
