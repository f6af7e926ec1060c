// The host test suite's main: Catch2 v2's own.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
