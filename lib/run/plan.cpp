// The plan: inputs loaded, checked and expanded once.
#include "run/plan.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "measure/input_cache.hpp"

namespace pinbench::run {

namespace {

// FNV-1a, 64 bits: a digest to tell inputs apart, not a defence against anyone.
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char ch : text) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

plan make_plan(std::vector<scenario::scenario> scenarios, plan_settings settings) {
  plan p;
  p.settings = std::move(settings);
  const auto& overrides = p.settings.overrides;
  // A run checks every override against every scenario first: a bad --set fails before any
  // expansion. Validate checks each scenario in turn, saying which passed before the one that
  // did not.
  if (p.settings.keep_cases)
    for (const auto& s : scenarios) scenario::check_overrides(s, overrides);
  // One listing of a user's folder for all the cases that read it, for this plan's life.
  measure::input_cache inputs_read_once;
  std::int64_t longest_timeout_ns = 0;
  for (auto& s : scenarios) {
    planned_scenario ps;
    ps.spec = std::move(s);
    if (p.settings.keep_cases) {
      ps.cases = scenario::expand(ps.spec, overrides, p.settings.max_cases);
      ps.case_count = ps.cases.size();
      for (const auto& c : ps.cases)
        longest_timeout_ns = std::max(longest_timeout_ns, c.sampling.timeout_ns);
    } else {
      scenario::check_overrides(ps.spec, overrides);
      // The count first, from the matrix's factors; then every case, one at a time, when a run
      // could build them all.
      ps.case_count = scenario::checked_case_count(ps.spec, overrides, p.settings.max_cases);
      ps.counted_only = ps.case_count > scenario::max_built_cases;
      if (!ps.counted_only)
        scenario::for_each_case(ps.spec, overrides, p.settings.max_cases, [](const auto&) {});
    }
    p.total_cases += ps.case_count;
    p.scenarios.push_back(std::move(ps));
    if (p.settings.on_planned) p.settings.on_planned(p.scenarios.back());
  }
  for (const auto& ps : p.scenarios)
    if (!ps.spec.builtin) p.input_files.push_back({"the scenario file", ps.spec.source});
  for (const auto& ps : p.scenarios)
    for (const auto& c : ps.cases)
      if (c.typed)
        for (auto& f : c.typed->input_files())
          p.input_files.push_back({"the case input", std::move(f)});
  p.rank_timeout =
      p.settings.rank_timeout.count() > 0
          ? p.settings.rank_timeout
          : std::chrono::duration_cast<dist::timeout>(
                std::chrono::nanoseconds(2 * longest_timeout_ns) + std::chrono::minutes(1));
  return p;
}

plan make_plan(const std::vector<std::string>& inputs, const std::vector<std::string>& sets,
               plan_settings settings) {
  settings.overrides = scenario::parse_overrides(sets);
  return make_plan(scenario::load_inputs(inputs), std::move(settings));
}

std::string plan::fingerprint(const nlohmann::json& platform) const {
  nlohmann::json doc = nlohmann::json::array();
  for (const auto& ps : scenarios) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : ps.cases)
      cases.push_back({c.id, c.params, c.sampling.warmup, c.sampling.min_samples,
                       c.sampling.max_samples, c.sampling.max_noise, c.sampling.min_time_ns,
                       c.sampling.timeout_ns});
    doc.push_back({ps.spec.name, ps.spec.kind, std::move(cases)});
  }
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& o : settings.overrides) sets.push_back({o.key, o.value});
  const nlohmann::json run{settings.seed, settings.repeat};
  return fmt::format("{:016x}", fnv1a(nlohmann::json{doc, sets, run, platform}.dump()));
}

}  // namespace pinbench::run
