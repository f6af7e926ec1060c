// A tune's session: the device, the clock against --budget, progress, and cases measured
// through the same plan and runner as `pinbench run`.
#include "tune/session.hpp"

#include <cstdio>
#include <utility>

#include "core/clock.hpp"
#include "core/interrupt.hpp"
#include "run/plan.hpp"
#include "run/runner.hpp"

namespace pinbench::tune {

session::session(const device::platform& platform, std::uint64_t seed, std::int64_t budget_ns,
                 bool quiet, std::string command_line)
    : platform_(platform),
      device_(platform.open_home()),
      seed_(seed),
      budget_ns_(budget_ns),
      started_ns_(now_ns()),
      quiet_(quiet),
      command_line_(std::move(command_line)) {}

std::int64_t session::left_ns() const noexcept {
  return budget_ns_ - (now_ns() - started_ns_);
}

double session::elapsed_s() const noexcept {
  return static_cast<double>(now_ns() - started_ns_) / 1e9;
}

bool session::interrupted() noexcept {
  return interrupt_requested();
}

void session::progress(const std::string& line) const {
  if (quiet_) return;
  std::fprintf(stderr, "pinbench: tune: %s\n", line.c_str());
}

scenario::scenario session::scenario_from(nlohmann::json doc, const std::string& source) {
  doc["schema"] = "pinbench.scenario/1";
  return scenario::parse_scenario_document(nlohmann::ordered_json(doc), source);
}

result::run_result session::measure(std::vector<scenario::scenario> scenarios) const {
  run::plan_settings settings;
  settings.seed = seed_;
  const run::plan plan = run::make_plan(std::move(scenarios), std::move(settings));
  run::run_options options;
  options.command_line = command_line_;
  options.platform = &platform_;
  // Telemetry would poll NVML beside every short trial; the trials compare settings on one
  // device within seconds, so the conditions they share need no record per case.
  options.telemetry_device = "off";
  return run::run_scenarios(plan, *device_, options);
}

result::run_result session::empty_result() const {
  result::run_result r = run::new_result(*device_, seed_, command_line_);
  r.environment = run::environment_block(*device_);
  return r;
}

result::run_result run_search(const session& s, search_strategy& strategy) {
  strategy.search();
  strategy.confirm();
  result::run_result out = strategy.finish();
  if (out.tune) {
    out.tune->stopped_by = strategy.stopped_by();
    out.tune->elapsed_s = s.elapsed_s();
  }
  if (strategy.stopped_by() == result::search_stop::interrupted && !out.interrupted) {
    out.interrupted = true;
    out.interrupted_by = interrupt_signal_name();
  }
  return out;
}

void append(result::run_result& into, result::run_result more) {
  if (into.created.empty()) {  // the first measured: its run facts and environment
    auto earlier = std::move(into.scenarios);
    into = std::move(more);
    for (auto& s : into.scenarios) earlier.push_back(std::move(s));
    into.scenarios = std::move(earlier);
    return;
  }
  for (auto& s : more.scenarios) into.scenarios.push_back(std::move(s));
  into.interrupted = into.interrupted || more.interrupted;
  if (into.interrupted_by.empty()) into.interrupted_by = more.interrupted_by;
}

}  // namespace pinbench::tune
