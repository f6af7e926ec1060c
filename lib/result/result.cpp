// The result model's own operations: metric lookup, failure, and merging rounds and runs.
#include "result/result.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/json_path.hpp"
#include "core/text.hpp"

namespace pinbench::result {

namespace {

void flatten_into(const nlohmann::json& j, const std::string& prefix,
                  std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items())
      flatten_into(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  if (prefix.empty()) return;
  if (j.is_string())
    out[prefix] = j.get<std::string>();
  else if (j.is_null())
    out[prefix] = "";
  else if (j.is_number_float())
    out[prefix] = exact_number(j.get<double>());
  else
    out[prefix] = j.dump();
}

}  // namespace

std::map<std::string, std::string> flat_params(const nlohmann::json& params) {
  std::map<std::string, std::string> out;
  flatten_into(params, {}, out);
  return out;
}

summary finite_summary(const metric& m) {
  std::vector<double> finite;
  finite.reserve(m.samples.size());
  for (double x : m.samples)
    if (std::isfinite(x)) finite.push_back(x);
  return summarize(finite);
}

std::optional<double> finite_median(const case_result& c, std::string_view metric) {
  const result::metric* m = c.find(metric);
  if (m == nullptr) return std::nullopt;
  const summary s = finite_summary(*m);
  if (s.n == 0) return std::nullopt;
  return s.median;
}

std::string_view to_string(direction d) noexcept {
  switch (d) {
    case direction::higher:
      return "higher";
    case direction::lower:
      return "lower";
    case direction::none:
      return "";
  }
  return "";
}

std::optional<direction> direction_from(std::string_view text) noexcept {
  for (auto d : {direction::higher, direction::lower, direction::none})
    if (to_string(d) == text) return d;
  return std::nullopt;
}

std::string_view to_string(case_status s) noexcept {
  switch (s) {
    case case_status::ok:
      return "ok";
    case case_status::error:
      return "error";
    case case_status::interrupted:
      return "interrupted";
    case case_status::skipped:
      return "skipped";
  }
  return "?";
}

std::string_view id_without_rank(const case_result& c) noexcept {
  std::string_view id = c.id;
  if (!c.rank || !id.starts_with("rank=")) return id;
  const auto comma = id.find(',');
  return comma == std::string_view::npos ? std::string_view("default") : id.substr(comma + 1);
}

std::optional<case_status> case_status_from(std::string_view text) noexcept {
  for (auto s :
       {case_status::ok, case_status::error, case_status::interrupted, case_status::skipped})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

summary metric::summarize() const {
  return pinbench::summarize(samples);
}

std::string_view to_string(stop_reason r) noexcept {
  switch (r) {
    case stop_reason::converged:
      return "converged";
    case stop_reason::max_samples:
      return "max_samples";
    case stop_reason::timeout:
      return "timeout";
    case stop_reason::interrupted:
      return "interrupted";
    case stop_reason::single:
      return "single";
  }
  return "?";
}

const metric* case_result::find(std::string_view name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

metric& case_result::add(std::string name, std::string unit, direction better) {
  for (auto& m : metrics)
    if (m.name == name) return m;
  metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.better = better;
  metrics.push_back(std::move(m));
  return metrics.back();
}

std::string run_result::backend_name() const {
  return backend.empty() ? environment_text({"backend"}) : backend;
}

std::optional<device::platform_kind> run_result::platform() const {
  return device::parse_platform_kind(backend_name());
}

std::string run_result::environment_text(std::initializer_list<const char*> keys) const {
  const nlohmann::json* v = find_path(environment, keys);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool run_result::any_failed() const {
  for (const auto& s : scenarios)
    for (const auto& c : s.cases)
      if (c.status == case_status::error) return true;
  return false;
}

namespace {

// error before skipped before interrupted before ok: what a case is, over its rounds.
int severity(case_status status) {
  switch (status) {
    case case_status::error:
      return 3;
    case case_status::skipped:
      return 2;
    case case_status::interrupted:
      return 1;
    case case_status::ok:
      return 0;
  }
  return 0;
}

void add_unique(std::vector<std::string>& to, const std::string& line) {
  if (std::find(to.begin(), to.end(), line) == to.end()) to.push_back(line);
}

// Extras that describe the conditions of one round, merged so that the case speaks of all the
// rounds its samples came from (`done`: the completed rounds, `round_of_done` their numbers):
// - telemetry: before of the first, after of the last, every reason seen, throttled in any,
//   the discarded samples of all;
// - link_ceiling: the first round's, and when the rounds measured different ceilings (the host
//   backend's memcpy is measured in each), `by_round` lists each, so that a sample's
//   link_fraction is its bandwidth over its own round's ceiling.
void merge_round_conditions(case_result& out, const std::vector<const case_result*>& done,
                            const std::vector<std::uint32_t>& round_of_done) {
  if (done.size() < 2) return;
  const auto watched = [](const case_result* c) {
    const auto it = c->extra.find("telemetry");
    return it != c->extra.end() && it->is_object() && it->contains("before");
  };
  if (std::all_of(done.begin(), done.end(), watched)) {
    nlohmann::json t = done.front()->extra["telemetry"];
    std::vector<std::string> reasons;
    bool throttled = false;
    std::int64_t discarded = 0;
    for (const auto* c : done) {
      const auto& ct = c->extra["telemetry"];
      for (const auto& r : ct.value("reasons_seen", nlohmann::json::array()))
        if (r.is_string()) add_unique(reasons, r.get<std::string>());
      throttled = throttled || ct.value("throttled", false);
      discarded += ct.value("discarded_samples", std::int64_t{0});
    }
    std::sort(reasons.begin(), reasons.end());
    t["after"] = done.back()->extra["telemetry"]["after"];
    t["reasons_seen"] = reasons;
    t["throttled"] = throttled;
    t["discarded_samples"] = discarded;
    out.extra["telemetry"] = std::move(t);
  }
  nlohmann::json by_round = nlohmann::json::array();
  bool differ = false;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const auto it = done[i]->extra.find("link_ceiling");
    if (it == done[i]->extra.end() || !it->is_object()) return;
    differ = differ || *it != done.front()->extra["link_ceiling"];
    nlohmann::json entry = *it;
    entry["round"] = round_of_done[i];
    by_round.push_back(std::move(entry));
  }
  if (differ) out.extra["link_ceiling"]["by_round"] = std::move(by_round);
}

}  // namespace

case_result merge_rounds(std::vector<case_result> rounds,
                         const std::vector<std::uint32_t>& round_of) {
  if (rounds.size() == 1) return std::move(rounds.front());
  const auto first_ok = std::find_if(rounds.begin(), rounds.end(), [](const case_result& c) {
    return c.status == case_status::ok;
  });
  case_result out;
  if (first_ok == rounds.end()) {
    // No round completed: the worst of them says why.
    const auto worst = std::max_element(
        rounds.begin(), rounds.end(),
        [](const auto& a, const auto& b) { return severity(a.status) < severity(b.status); });
    out = std::move(*worst);
    out.elapsed_s = 0;
    for (const auto& r : rounds) out.elapsed_s += r.elapsed_s;
    return out;
  }
  out.id = first_ok->id;
  out.rank = first_ok->rank;
  out.params = first_ok->params;
  out.extra = first_ok->extra;
  out.snapshot = std::move(first_ok->snapshot);
  std::size_t completed = 0;
  std::vector<const case_result*> done;
  std::vector<std::uint32_t> round_of_done;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    auto& r = rounds[i];
    const std::uint32_t round = round_of.at(i);
    out.elapsed_s += r.elapsed_s;
    for (const auto& w : r.warnings) add_unique(out.warnings, w);
    if (r.status == case_status::interrupted) {
      // Other rounds completed: the case stands on them.
      add_unique(out.warnings,
                 fmt::format("round {} was interrupted: its samples are left out", round + 1));
      continue;
    }
    if (r.status != case_status::ok) {
      if (severity(r.status) > severity(out.status)) {
        out.status = r.status;
        out.message = fmt::format("round {}: {}", round + 1, r.message);
      }
      continue;
    }
    ++completed;
    done.push_back(&r);
    round_of_done.push_back(round);
    out.stopped = r.stopped;
    for (auto& m : r.metrics) {
      metric& into = out.add(m.name, m.unit, m.better);
      into.deterministic = m.deterministic;
      into.samples.insert(into.samples.end(), m.samples.begin(), m.samples.end());
      // A round that is itself a merge keeps its labels; a plain round labels every sample.
      if (m.rounds.size() == m.samples.size() && !m.rounds.empty())
        into.rounds.insert(into.rounds.end(), m.rounds.begin(), m.rounds.end());
      else
        into.rounds.insert(into.rounds.end(), m.samples.size(), round);
    }
  }
  merge_round_conditions(out, done, round_of_done);
  // Rounds that gave samples (a merged run counts each of its rounds).
  std::vector<std::uint32_t> seen;
  for (const auto& m : out.metrics) seen.insert(seen.end(), m.rounds.begin(), m.rounds.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  out.extra["rounds"] = seen.empty() ? completed : seen.size();
  return out;
}

run_result merge_runs(std::vector<run_result> runs) {
  if (runs.size() == 1) return std::move(runs.front());
  run_result out = runs.front();
  out.scenarios.clear();
  out.interrupted = false;
  out.interrupted_by.clear();
  out.repeat = 0;

  // Each run's rounds get their own labels: run k's round r becomes offset_k + r.
  struct slot {
    std::vector<case_result> rounds;
    std::vector<std::uint32_t> labels;
  };
  std::map<std::pair<std::string, std::string>, slot> cases;
  std::uint32_t offset = 0;
  for (auto& run : runs) {
    std::uint32_t width = std::max<std::uint32_t>(run.repeat, 1);
    out.interrupted = out.interrupted || run.interrupted;
    if (out.interrupted_by.empty()) out.interrupted_by = run.interrupted_by;
    for (auto& s : run.scenarios) {
      auto it = std::find_if(out.scenarios.begin(), out.scenarios.end(),
                             [&](const scenario_result& o) { return o.name == s.name; });
      if (it == out.scenarios.end()) {
        scenario_result copy = s;
        copy.cases.clear();
        out.scenarios.push_back(std::move(copy));
        it = std::prev(out.scenarios.end());
      }
      for (auto& c : s.cases) {
        if (std::none_of(it->cases.begin(), it->cases.end(),
                         [&](const case_result& o) { return o.id == c.id; })) {
          case_result placeholder;
          placeholder.id = c.id;
          it->cases.push_back(std::move(placeholder));
        }
        // Relabel here, so that merge_rounds keeps the labels as they are.
        for (auto& m : c.metrics) {
          if (m.rounds.size() != m.samples.size()) m.rounds.assign(m.samples.size(), 0);
          for (auto& r : m.rounds) {
            width = std::max(width, r + 1);
            r += offset;
          }
        }
        auto& sl = cases[{s.name, c.id}];
        sl.labels.push_back(offset);
        sl.rounds.push_back(std::move(c));
      }
    }
    offset += width;
    out.repeat += width;
  }
  for (auto& s : out.scenarios)
    for (auto& c : s.cases) {
      auto& sl = cases[{s.name, c.id}];
      c = merge_rounds(std::move(sl.rounds), sl.labels);
    }
  return out;
}

}  // namespace pinbench::result
