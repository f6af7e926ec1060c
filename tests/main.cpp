// The host test suite's main: Catch2 v2's runner, after one export.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  // ctest starts one process per test with its spec first: every process the test starts
  // inherits it, so that scripts/test.sh's record of thread-starting tests
  // (tests/thread_record/) can name the test a thread was started for.
  if (argc > 1 && argv[1][0] != '-' && std::getenv("PINBENCH_THREAD_RECORD") != nullptr)
    ::setenv("PINBENCH_TEST_SPEC", argv[1], 1);
  return Catch::Session().run(argc, argv);
}
