// The runner: every case of every scenario, in order, recording failures and Ctrl-C as results.
#include <new>

#include <fmt/format.h>

#include "bench/allocator.hpp"
#include "bench/loader.hpp"
#include "bench/engine.hpp"
#include "bench/transfer.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"

namespace pinbench::bench {

std::unique_ptr<engine> make_engine(std::string_view kind) {
  if (kind == "transfer") return make_transfer_engine();
  if (kind == "allocator") return make_allocator_engine();
  if (kind == "loader") return make_loader_engine();
  return nullptr;
}

nlohmann::json environment_block(device::backend& dev) {
  nlohmann::json env;
  env["backend"] = std::string(dev.name());
  env["device"] = dev.describe();
  env["host"] = read_host_info();
  env["warnings"] = dev.warnings();
  return env;
}

namespace {

case_result run_one(engine* eng, const scenario::scenario& s, const scenario::case_spec& c,
                    run_context& ctx) {
  const std::int64_t t0 = now_ns();
  case_result r;
  try {
    if (eng == nullptr) throw error("no engine for kind \"" + s.kind + "\" in this build");
    r = eng->run_case(c, ctx);
  } catch (const interrupted_error&) {
    r = case_result{};
    r.status = "interrupted";
    r.stopped = stop_reason::interrupted;
    r.message = "interrupted before the case completed";
  } catch (const unsupported_error& e) {
    r = case_result{};
    r.status = "skipped";
    r.message = e.what();
  } catch (const std::bad_alloc&) {
    r = case_result{};
    r.status = "error";
    r.message = "host memory exhausted (std::bad_alloc)";
  } catch (const std::exception& e) {
    r = case_result{};
    r.status = "error";
    r.message = e.what();
  }
  r.id = c.id;
  r.params = scenario::display_params(s.kind, c.params);
  r.elapsed_s = static_cast<double>(now_ns() - t0) / 1e9;
  return r;
}

}  // namespace

run_result run_scenarios(const std::vector<scenario::scenario>& scenarios, device::backend& dev,
                         const run_options& options) {
  run_result result;
  result.tool_version = PINBENCH_VERSION;
  result.tool_git = PINBENCH_GIT;
  char buf[32];
  result.created = std::string(utc_timestamp(buf));
  result.backend = std::string(dev.name());
  result.seed = options.seed;
  result.command_line = options.command_line;
  for (const auto& o : options.overrides) result.overrides[o.key] = o.value;

  // Expand everything first: the total drives the progress line, and a bad override fails
  // before anything is measured.
  std::vector<std::vector<scenario::case_spec>> cases;
  std::size_t total = 0;
  for (const auto& s : scenarios) {
    cases.push_back(scenario::expand(s, options.overrides, options.max_cases));
    total += cases.back().size();
  }

  run_context ctx{dev, options.seed, options.want_snapshots};
  std::size_t index = 0;
  for (std::size_t i = 0; i < scenarios.size() && !result.interrupted; ++i) {
    const auto& s = scenarios[i];
    scenario_result sr{s.name, s.description, s.kind, s.source, s.gate, {}, {}};
    auto eng = make_engine(s.kind);
    for (const auto& c : cases[i]) {
      if (interrupt_requested()) {
        result.interrupted = true;
        break;
      }
      if (options.on_case) options.on_case(index, total, s.name, c.id);
      ++index;
      sr.cases.push_back(run_one(eng.get(), s, c, ctx));
      if (options.on_case_done) options.on_case_done(index - 1, total, s.name, sr.cases.back());
      if (sr.cases.back().status == "interrupted") result.interrupted = true;
    }
    if (eng) sr.verdict = eng->verdict(sr);
    result.scenarios.push_back(std::move(sr));
  }
  result.environment = environment_block(dev);
  return result;
}

}  // namespace pinbench::bench
