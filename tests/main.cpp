// The host test suite's main: Catch2 v2's runner, after one export.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

#include "skip.hpp"

int main(int argc, char* argv[]) {
  // ctest starts one process per test with its spec first: every process the test starts
  // inherits it, so that scripts/test.sh's record of thread-starting tests
  // (tests/thread_record/) can name the test a thread was started for.
  if (argc > 1 && argv[1][0] != '-' && std::getenv("PINBENCH_THREAD_RECORD") != nullptr)
    ::setenv("PINBENCH_TEST_SPEC", argv[1], 1);
  const int code = Catch::Session().run(argc, argv);
  // One case per process under ctest: a case that skipped (and failed nothing) is reported as
  // skipped (77, SKIP_RETURN_CODE), not as passed.
  if (code == 0 && pinbench::testing::skipped_cases() > 0 &&
      std::getenv("PINBENCH_ONE_CASE") != nullptr)
    return 77;
  return code;
}
