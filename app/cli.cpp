// The command line: parses it into one subcommand, runs it, and maps every error to one line
// and one exit code. In a library of its own (pinbench_app) so that tests can drive the very
// CLI in-process, with kinds of their own registered.
#include <csignal>
#include <cstdio>
#include <exception>
#include <map>
#include <new>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/version.hpp"
#include "kinds/registry.hpp"

namespace {
std::string g_command_line;
}

namespace pinbench::app {
void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) g_command_line += ' ';
    g_command_line += argv[i];
  }
}
const std::string& command_line() {
  return g_command_line;
}

int run_cli(int argc, char** argv) {
  // Over a file-size limit (ulimit -f) write() then fails with EFBIG, which pinbench reports,
  // instead of the process being killed by SIGXFSZ with nothing said.
  std::signal(SIGXFSZ, SIG_IGN);
  set_command_line(argc, argv);
  spdlog::set_pattern("pinbench: %l: %v");
  spdlog::set_level(spdlog::level::warn);

  std::string kind_names;
  for (const auto* k : kinds::all()) kind_names += (kind_names.empty() ? "" : ", ") + k->kind;
  CLI::App cli{
      "pinbench: how fast data reaches the GPU and how well GPU memory is used.\n"
      "Runs declarative JSON scenarios (" +
      kind_names +
      ") on a CUDA device\n"
      "or on the host backend, and reports tables, JSON and CSV."};
  cli.require_subcommand(1);
  cli.set_version_flag("--version",
                       "pinbench " + std::string(version) + " (" + std::string(git_describe) + ")");
  std::map<CLI::App*, runner> runners;
  const auto add = [&](runner (*f)(CLI::App&)) {
    const std::size_t before = cli.get_subcommands({}).size();
    auto r = f(cli);
    runners[cli.get_subcommands({}).at(before)] = std::move(r);
  };
  add(add_run);
  add(add_validate);
  add(add_list);
  add(add_info);
  add(add_compare);
  add(add_report);
  add(add_tune);
  add(add_export);
  add(add_check);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "pinbench: error: %s (see pinbench --help)\n", e.what());
    return exit_input;
  }

  try {
    for (auto* sub : cli.get_subcommands())
      if (auto it = runners.find(sub); it != runners.end()) return it->second();
    return exit_input;
  } catch (const input_error& e) {
    std::fprintf(stderr, "pinbench: error: %s\n", e.what());
    return exit_input;
  } catch (const environment_error& e) {
    std::fprintf(stderr, "pinbench: error: %s\n", e.what());
    return exit_environment;
  } catch (const interrupted_error&) {
    std::fprintf(stderr, "pinbench: interrupted (%s)\n",
                 *interrupt_signal_name() != '\0' ? interrupt_signal_name() : "SIGINT");
    return interrupted_exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "pinbench: error: out of host memory\n");
    return exit_case_failed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pinbench: error: %s\n", e.what());
    return exit_case_failed;
  }
}

}  // namespace pinbench::app
