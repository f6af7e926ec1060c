// The pinbench subcommands: each file adds one to the CLI11 app and runs it.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace pinbench::app {

/// Registers a subcommand; the returned function runs it after parsing and gives the exit code.
using runner = std::function<int()>;

runner add_run(CLI::App& app);
runner add_validate(CLI::App& app);
runner add_list(CLI::App& app);
runner add_info(CLI::App& app);
runner add_compare(CLI::App& app);  ///< app/cmd_compare.cpp
runner add_report(CLI::App& app);   ///< app/cmd_report.cpp
runner add_tune(CLI::App& app);     ///< app/cmd_tune.cpp
runner add_export(CLI::App& app);   ///< app/cmd_export.cpp
runner add_check(CLI::App& app);    ///< app/cmd_check.cpp

/// Parses argv (argv[0] the program), runs the subcommand and returns the exit code; every error
/// is one line on stderr. What `main` does, callable in-process by tests.
int run_cli(int argc, char** argv);

/// The command line as typed, for the result file.
void set_command_line(int argc, char** argv);
[[nodiscard]] const std::string& command_line();

}  // namespace pinbench::app
