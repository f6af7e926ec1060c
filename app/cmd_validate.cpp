// `pinbench validate`: parse and check scenarios and overrides without running anything.
#include <cstdint>
#include <cstdio>

#include <fmt/format.h>

#include "commands.hpp"
#include "run/plan.hpp"

namespace pinbench::app {

namespace {
struct validate_args {
  std::vector<std::string> inputs;
  std::vector<std::string> sets;
  bool quiet = false;
  std::uint64_t max_cases = scenario::default_max_cases;
};

int validate(const validate_args& a) {
  // Every case built and checked as `run` would, one at a time (memory for one); a matrix too
  // large for run to build is only counted.
  run::plan_settings settings;
  settings.max_cases = a.max_cases;
  settings.keep_cases = false;
  // A line per scenario as it is checked: those that passed are named before an error.
  settings.on_planned = [&](const run::planned_scenario& ps) {
    const auto& s = ps.spec;
    const std::string note =
        ps.counted_only
            ? fmt::format("  (counted only: run builds at most {} cases of one scenario)",
                          scenario::max_built_cases)
            : std::string();
    if (!a.quiet)
      std::printf("ok  %-28s %-10s %4llu case(s)  %s%s\n", s.name.c_str(), s.kind.c_str(),
                  static_cast<unsigned long long>(ps.case_count), s.source.c_str(), note.c_str());
  };
  (void)run::make_plan(a.inputs, a.sets, std::move(settings));
  return 0;
}
}  // namespace

runner add_validate(CLI::App& app) {
  auto a = std::make_shared<validate_args>();
  auto* sub =
      app.add_subcommand("validate", "Check scenario files (and --set overrides); run nothing");
  sub->add_option("inputs", a->inputs, "Scenario files, directories of them, or builtin:NAME")
      ->required();
  sub->add_option("--set", a->sets, "Overrides to check as `run` would apply them")
      ->type_name("KEY=VALUE");
  sub->add_option("--max-cases", a->max_cases,
                  "Refuse a scenario whose matrix expands to more cases than this")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{UINT64_MAX}))
      ->capture_default_str();
  sub->add_flag("--quiet,-q", a->quiet, "Print nothing; the exit code tells");
  return [a] { return validate(*a); };
}

}  // namespace pinbench::app
