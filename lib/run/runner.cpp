// The runner: every case of every scenario, in order, recording failures and Ctrl-C as results.
#include "run/runner.hpp"

#include <algorithm>
#include <new>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "core/version.hpp"
#include "kinds/registry.hpp"
#include "run/case_telemetry.hpp"

namespace pinbench::run {

namespace {

using measure::engine;
using result::case_result;

// The kind's engine, or nullptr when the kind is unknown or cannot run in this build.
std::unique_ptr<engine> make_engine(std::string_view kind) {
  const auto* k = kinds::find(kind);
  return k != nullptr && k->make_engine ? k->make_engine() : nullptr;
}

case_result run_one(engine* eng, const scenario::scenario& s, const scenario::case_spec& c,
                    measure::run_context& ctx, case_telemetry& telemetry) {
  const std::int64_t t0 = now_ns();
  case_result r;
  telemetry.begin();
  try {
    if (eng == nullptr) throw error("no engine for kind \"" + s.kind + "\" in this build");
    r = eng->run_case(c, ctx);
  } catch (const dist::rank_lost_error&) {
    throw;  // not this case's failure: the launch cannot go on
  } catch (const interrupted_error&) {
    r = case_result{};
    r.status = result::case_status::interrupted;
    r.stopped = result::stop_reason::interrupted;
    r.message = "interrupted before the case completed";
  } catch (const unsupported_error& e) {
    r = case_result{};
    r.status = result::case_status::skipped;
    r.message = e.what();
  } catch (const std::bad_alloc&) {
    r = case_result{};
    r.status = result::case_status::error;
    r.message = "host memory exhausted (std::bad_alloc)";
  } catch (const std::exception& e) {
    r = case_result{};
    r.status = result::case_status::error;
    r.message = e.what();
  }
  telemetry.end(r);
  r.id = c.id;
  r.params = scenario::display_params(s.kind, c.params);
  r.elapsed_s = static_cast<double>(now_ns() - t0) / 1e9;
  return r;
}

// Before each case under a launch: every rank says whether it was interrupted; all stop when
// one was. Returns true to go on.
bool meet_before_case(dist::communicator& world, dist::timeout limit) {
  const auto said = world.all_gather(interrupt_requested() ? "stop" : "go", limit);
  return std::all_of(said.begin(), said.end(), [](const std::string& s) { return s == "go"; });
}

}  // namespace

nlohmann::json lost_rank_json(const dist::rank_lost_error& e) {
  return {{"rank", e.lost_rank() >= 0 ? nlohmann::json(e.lost_rank()) : nlohmann::json()},
          {"message", e.what()},
          {"stopped_by_lead", e.stopped_by_lead()}};
}

result::run_result new_result(const device::backend& dev, std::uint64_t seed,
                              const std::string& command_line) {
  result::run_result result;
  result.tool_version = std::string(version);
  result.tool_git = std::string(git_describe);
  char buf[32];
  result.created = std::string(utc_timestamp(buf));
  result.backend = std::string(dev.name());
  result.seed = seed;
  result.command_line = command_line;
  return result;
}

result::run_result run_scenarios(const plan& p, device::backend& dev, const run_options& options) {
  if (!p.settings.keep_cases) throw error("run_scenarios: this plan keeps no case (validate's)");
  result::run_result result = new_result(dev, p.settings.seed, options.command_line);
  for (const auto& o : p.settings.overrides) result.overrides[o.key] = o.value;

  const auto& scenarios = p.scenarios;
  const std::size_t total = p.total_cases;
  auto single = dist::connect(dist::launch_info{}, dist::timeout{0});
  dist::communicator& world = options.world != nullptr ? *options.world : *single;
  const bool launched = world.size() > 1;
  // The timer's own cost, measured before the first case, while nothing else of ours runs.
  (void)timer_overhead();
  measure::run_context ctx{dev, p.settings.seed, options.want_snapshots};
  ctx.world = &world;
  ctx.platform = options.platform;
  case_telemetry telemetry(dev, options.telemetry_device, options.discard_on_throttle);
  ctx.numa = device::resolve_numa(options.numa, dev.describe());
  const std::uint32_t repeat = std::max<std::uint32_t>(p.settings.repeat, 1);
  result.repeat = options.only_round ? 1 : repeat;
  std::vector<std::unique_ptr<engine>> engines;
  engines.reserve(scenarios.size());
  for (const auto& s : scenarios) engines.push_back(make_engine(s.spec.kind));

  // rounds[i][j]: the results of case j of scenario i, one per round that reached it.
  std::vector<std::vector<std::vector<case_result>>> rounds(scenarios.size());
  std::vector<std::pair<std::size_t, std::size_t>> order;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    rounds[i].resize(scenarios[i].cases.size());
    for (std::size_t j = 0; j < scenarios[i].cases.size(); ++j) order.emplace_back(i, j);
  }
  const std::size_t total_runs = options.only_round ? total : total * repeat;
  // A scenario the run got to is in the result, even if Ctrl-C came before its first case.
  std::vector<bool> reached(scenarios.size(), false);
  std::size_t index = 0;
  std::mt19937_64 shuffle_rng(p.settings.seed ^ 0x5eed'0f'70'7dULL);
  try {
    for (std::uint32_t round = 0; round < repeat && !result.interrupted; ++round) {
      // One round keeps the declared order; several are each shuffled (Fisher-Yates over a
      // fixed generator: the same seed gives the same order with every standard library).
      if (repeat > 1)
        for (std::size_t k = order.size(); k > 1; --k)
          std::swap(order[k - 1], order[shuffle_rng() % k]);
      if (options.only_round && *options.only_round != round) continue;
      for (const auto& [i, j] : order) {
        reached[i] = true;
        if (launched ? !meet_before_case(world, p.rank_timeout) : interrupt_requested()) {
          result.interrupted = true;
          break;
        }
        const auto& s = scenarios[i].spec;
        const auto& c = scenarios[i].cases[j];
        if (options.on_case) options.on_case(index, total_runs, s.name, c.id);
        ++index;
        rounds[i][j].push_back(run_one(engines[i].get(), s, c, ctx, telemetry));
        if (options.on_case_done)
          options.on_case_done(index - 1, total_runs, s.name, rounds[i][j].back());
        if (rounds[i][j].back().status == result::case_status::interrupted)
          result.interrupted = true;
      }
    }
  } catch (const dist::rank_lost_error& e) {
    // The launch cannot go on, but what this rank completed is kept: the case the loss cut
    // short is left out (it never got a result), and the caller decides who writes.
    result.lost_rank = lost_rank_json(e);
  }
  if (result.interrupted) result.interrupted_by = interrupt_signal_name();

  // Declared order in the result, every case that ran at least once.
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& s = scenarios[i].spec;
    result::scenario_result sr{s.name, s.description, s.kind, s.source, s.gate, {}, {}};
    for (auto& per_round : rounds[i]) {
      if (per_round.empty()) continue;
      std::vector<std::uint32_t> labels(per_round.size());
      for (std::size_t k = 0; k < labels.size(); ++k) labels[k] = static_cast<std::uint32_t>(k);
      sr.cases.push_back(result::merge_rounds(std::move(per_round), labels));
    }
    if (!reached[i]) continue;
    if (engines[i]) sr.verdict = engines[i]->verdict(sr, dev.kind());
    result.scenarios.push_back(std::move(sr));
  }
  result.environment = environment_block(dev);
  if (const auto w = telemetry.unwatched_warning(); !w.empty())
    result.environment["warnings"].push_back(w);
  return result;
}

}  // namespace pinbench::run
