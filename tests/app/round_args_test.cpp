// The command line of a round's process (`run --repeat`): built from what `run` parsed, so that
// an option added to `run` reaches the rounds without anyone listing it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "round_processes.hpp"

namespace {

bool round_sets_it(const std::string& name) {
  const auto& own = pinbench::app::options_rounds_set_themselves;
  return std::find(own.begin(), own.end(), name) != own.end();
}

// `pinbench run` as the command line registers it. The runner holds what the options parse
// into, so it lives as long as the parse.
struct run_command {
  CLI::App app;
  pinbench::app::runner runner = pinbench::app::add_run(app);

  [[nodiscard]] CLI::App& run() { return *app.get_subcommand("run"); }
  void parse(std::vector<std::string> words) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

}  // namespace

TEST_CASE("a round's process is given every option of run but the rounds' own", "[app][rounds]") {
  run_command command;
  CLI::App* run = &command.run();
  // Every option of `run`, each given a value it accepts.
  std::vector<std::string> words{"pinbench", "run", "builtin:transfer-modes", "a.json"};
  for (const CLI::Option* o : run->get_options()) {
    if (o->get_positional() || o->get_lnames().empty()) continue;
    const std::string name = "--" + o->get_lnames().front();
    if (name == "--help") continue;
    words.push_back(name);
    if (o->get_expected_min() == 0) continue;  // a flag
    // A value each option's check accepts.
    if (name == "--backend")
      words.emplace_back("cuda");
    else if (name == "--format")
      words.emplace_back("csv");
    else if (name == "--rounds-in")
      words.emplace_back("processes");
    else if (name == "--telemetry-device")
      words.emplace_back("off");
    else if (name == "--host-fault")
      words.emplace_back("slow=5%");
    else if (name == "--numa")
      words.emplace_back("none");
    else if (name == "--rank-timeout")
      words.emplace_back("30");
    else if (name == "--set")
      words.emplace_back("bytes=1MiB");
    else if (name == "--host-capacity")
      words.emplace_back("1GiB");
    else if (name == "--out" || name == "--snapshot" || name == "--plan-fingerprint")
      words.emplace_back("x");
    else
      words.emplace_back("3");  // counts: seed, repeat, round, max-cases
  }
  command.parse(words);

  const auto args = pinbench::app::round_run_args(*run, "host");
  INFO(fmt::format("{}", fmt::join(args, " ")));
  REQUIRE(args.front() == "run");
  CHECK(args.at(1) == "builtin:transfer-modes");
  CHECK(args.at(2) == "a.json");
  for (const CLI::Option* o : run->get_options()) {
    if (o->get_positional() || o->get_lnames().empty()) continue;
    const std::string name = "--" + o->get_lnames().front();
    if (name == "--help") continue;
    INFO(name);
    const auto at = std::find_if(args.begin(), args.end(), [&](const std::string& arg) {
      return arg == name || arg.rfind(name + "=", 0) == 0;  // a flag may carry its value
    });
    if (name == "--backend") {
      // Resolved by the starting process: every round measures its device.
      REQUIRE(at != args.end());
      CHECK(*(at + 1) == "host");
      CHECK(std::count(args.begin(), args.end(), name) == 1);
    } else if (round_sets_it(name)) {
      CHECK(at == args.end());
    } else {
      REQUIRE(at != args.end());
      if (o->get_expected_min() != 0) CHECK(*(at + 1) == o->results().front());
    }
  }
}

TEST_CASE("a flag given a value reaches a round with it", "[app][rounds]") {
  run_command command;
  command.parse({"pinbench", "run", "builtin:transfer-modes", "--discard-on-throttle=false",
                 "--set", "a=1", "--set=b=2"});
  const auto args = pinbench::app::round_run_args(command.run(), "host");
  INFO(fmt::format("{}", fmt::join(args, " ")));
  // The bare flag would turn it on in every round.
  CHECK(std::count(args.begin(), args.end(), "--discard-on-throttle=false") == 1);
  CHECK(std::count(args.begin(), args.end(), "--discard-on-throttle") == 0);
  const std::vector<std::string> sets{"--set", "a=1", "--set", "b=2"};
  CHECK(std::search(args.begin(), args.end(), sets.begin(), sets.end()) != args.end());
}
