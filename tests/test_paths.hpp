// Where the source tree and the built pinbench executable are, for tests that read fixtures or
// start the CLI.
#pragma once

#include <string>

namespace pinbench::testing {

// Defined out of line (test_paths.cpp, the only file that sees the build's path macros): with
// the paths as string literals in every test, GCC 12 folds their lengths into '+' chains and
// reports false -Warray-bounds at some optimisation levels and path lengths.
const std::string& source_dir();
const std::string& pinbench_exe();
/// tests/fake_nvml's library, and its variant without nvmlDeviceGetPowerUsage.
const std::string& fake_nvml_library();
const std::string& fake_nvml_no_power_library();

}  // namespace pinbench::testing
