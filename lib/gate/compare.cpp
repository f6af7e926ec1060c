// Pairing, verdicts and the exit code of `pinbench compare`; see compare.hpp.
#include "gate/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "core/units.hpp"
#include "gate/statistics.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// A metric's finite samples by round, in round order (one group when it carries no rounds).
round_samples by_round(const result::metric& m) {
  const bool labelled = m.rounds.size() == m.samples.size();
  std::map<std::uint32_t, std::vector<double>> groups;
  for (std::size_t i = 0; i < m.samples.size(); ++i)
    if (std::isfinite(m.samples[i])) groups[labelled ? m.rounds[i] : 0].push_back(m.samples[i]);
  round_samples out;
  for (auto& [round, samples] : groups) out.push_back(std::move(samples));
  return out;
}

std::vector<double> flatten(const round_samples& rounds) {
  std::vector<double> out;
  for (const auto& r : rounds) out.insert(out.end(), r.begin(), r.end());
  return out;
}

bool constant(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
}

std::string device_field(const result::run_result& r, const char* key) {
  return r.environment_text({"device", key});
}

endpoint describe(const result::run_result& r, const std::string& label) {
  endpoint e{label,
             r.backend_name(),
             device_field(r, "name"),
             device_field(r, "uuid"),
             r.created,
             r.tool_version,
             {}};
  for (const auto& s : r.scenarios) e.scenarios.push_back(s.name);
  return e;
}

std::string names_or_none(const std::vector<std::string>& names) {
  return names.empty() ? std::string("no scenario") : fmt::format("{}", fmt::join(names, ", "));
}

// The scenario's gate threshold for a metric, from the current result (what the scenario says
// now) or else the baseline's; 0 when neither has one.
double gate_threshold(const result::scenario_result* current, const result::scenario_result* base,
                      const std::string& metric) {
  for (const auto* s : {current, base}) {
    if (s == nullptr || !s->gate.is_object()) continue;
    const auto it = s->gate.find(metric);
    if (it == s->gate.end() || !it->is_object()) continue;
    const auto t = it->find("threshold");
    if (t != it->end() && t->is_number()) return std::max(0.0, t->get<double>());
  }
  return 0;
}

bool wanted(const options& o, const std::string& metric) {
  return o.metrics.empty() ||
         std::find(o.metrics.begin(), o.metrics.end(), metric) != o.metrics.end();
}

struct case_ref {
  const result::scenario_result* scenario = nullptr;
  const result::case_result* c = nullptr;
};

using case_index = std::map<std::pair<std::string, std::string>, case_ref>;

case_index index_cases(const result::run_result& r, const std::string& label) {
  case_index out;
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
    const auto& s = r.scenarios[i];
    for (std::size_t j = 0; j < s.cases.size(); ++j) {
      const auto [it, fresh] = out.try_emplace({s.name, s.cases[j].id}, case_ref{&s, &s.cases[j]});
      if (!fresh)
        throw input_error(label, fmt::format("scenarios[{}].cases[{}].id", i, j),
                          fmt::format("case \"{}\" of scenario \"{}\" appears twice: cases are "
                                      "paired by scenario name and case id",
                                      s.cases[j].id, s.name));
    }
  }
  return out;
}

// Filtered metrics of a case; `gated` tells whether any has a direction.
bool has_gated_metric(const result::case_result& c, const options& o) {
  return std::any_of(c.metrics.begin(), c.metrics.end(), [&](const result::metric& m) {
    return m.better != result::direction::none && wanted(o, m.name);
  });
}

bool has_wanted_metric(const result::case_result& c, const options& o) {
  return std::any_of(c.metrics.begin(), c.metrics.end(),
                     [&](const result::metric& m) { return wanted(o, m.name); });
}

// ---- one metric ----------------------------------------------------------------------------

class judge {
 public:
  judge(const options& o, std::uint64_t seed) : o_(o), seed_(seed) {}

  void run(row& r, const result::metric& base, const result::metric& current) const {
    const auto b_rounds = by_round(base);
    const auto c_rounds = by_round(current);
    const auto b = flatten(b_rounds);
    const auto c = flatten(c_rounds);
    r.base = {b.size(), median(b), b_rounds.size()};
    r.current = {c.size(), median(c), c_rounds.size()};
    r.ratio = nan;
    r.round_noise = std::max(b_rounds.size(), c_rounds.size()) >= 2;
    if (r.round_noise) {
      const auto between = between_round_noise(b_rounds, c_rounds);
      r.noise = between.relative;
      r.noise_freedom = between.freedom;
      r.noise_bound = spread_upper_bound(between, o_.confidence);
    } else {
      // Many samples estimate their own spread well: the estimate is the bound.
      r.noise = r.noise_bound = relative_noise(b);
    }
    r.threshold = std::max(r.requested, o_.noise_multiple * r.noise_bound);
    if (r.threshold > r.requested) r.source = threshold_source::noise;
    r.deterministic = base.deterministic && current.deterministic;
    const bool info = r.better == result::direction::none;
    r.gated = !info;
    r.result = info ? verdict::info : verdict::inconclusive;
    if (info) r.reason = "no direction (better is empty): shown for information, never gated";

    const auto stop = [&](std::string why) {
      if (!info) r.reason = std::move(why);
    };
    if (base.unit != current.unit)
      return stop(fmt::format("the unit changed from \"{}\" to \"{}\"", base.unit, current.unit));
    if (base.better != result::direction::none && current.better != result::direction::none &&
        base.better != current.better)
      return stop(fmt::format("the direction changed (better: {} -> {})",
                              result::to_string(base.better), result::to_string(current.better)));
    if (b.empty() || c.empty())
      return stop(std::string("no samples in the ") + (b.empty() ? "baseline" : "current result"));
    const auto negative = [](const std::vector<double>& v) {
      return std::any_of(v.begin(), v.end(), [](double x) { return x < 0; });
    };
    if (negative(b) || negative(c))
      return stop("negative samples: a ratio of medians does not apply");
    if (r.base.median == 0) {
      if (r.current.median != 0) return stop("the baseline median is 0: there is no ratio");
      r.ratio = 1;
      if (!info) {
        r.result = verdict::unchanged;
        r.reason = "both medians are 0";
      }
      return;
    }
    r.ratio = r.current.median / r.base.median;

    // What an engine declares deterministic (the allocator's policy counters for a seed) has no
    // noise: its change is known exactly and needs no test. Everything else is judged
    // statistically, even when its samples happen to agree: a timed value that repeats
    // exactly says nothing about how it varies from run to run.
    if (r.deterministic) {
      r.threshold = r.requested;
      r.source = r.requested > o_.threshold ? threshold_source::gate : threshold_source::option;
      r.noise = r.noise_bound = 0;
      r.noise_freedom = 0;
      r.ci_lo = r.ci_hi = r.ratio;
      if (!info) judge_exact(r, constant(b) && constant(c));
      return;
    }
    const auto ci =
        r.round_noise
            ? bootstrap_ratio_of_medians(b_rounds, c_rounds, o_.confidence, o_.resamples, seed_)
            : bootstrap_ratio_of_medians(b, c, o_.confidence, o_.resamples, seed_);
    r.ci_lo = ci.lo;
    r.ci_hi = ci.hi;
    const auto u = mann_whitney(b, c);
    r.p_value = u.p_value;
    r.test = u.exact ? "exact" : "normal";
    if (!info) judge_statistics(r, b.size(), c.size());
  }

 private:
  static const char* noise_name(const row& r) {
    return r.round_noise ? "the spread between rounds" : "the baseline's noise";
  }

  // "4.0%", or with rounds "9.5%, the 95% bound of a 4.0% spread over 4 degrees of freedom".
  std::string noise_text(const row& r) const {
    if (!r.round_noise) return detail::percent(r.noise);
    return fmt::format("{}, the {:g}% bound of a {} spread over {} degrees of freedom",
                       detail::percent(r.noise_bound), o_.confidence * 100,
                       detail::percent(r.noise), r.noise_freedom);
  }

  // Whether a change in `direction` (+1 up, -1 down) makes this metric worse.
  static bool worse(const row& r, int direction) {
    return (r.better == result::direction::lower) == (direction > 0);
  }

  void judge_exact(row& r, bool constant_sides) const {
    const double change = r.ratio - 1;
    const std::string what =
        constant_sides ? std::string("deterministic (declared by the engine): ")
                       : fmt::format(
                             "deterministic (declared by the engine) yet its samples vary; "
                             "medians compared: ");
    if (std::fabs(change) > r.threshold) {
      const int direction = change > 0 ? 1 : -1;
      r.result = worse(r, direction) ? verdict::regression : verdict::improvement;
      r.reason =
          what + fmt::format("{} by {}, beyond the {} threshold",
                             worse(r, direction) ? "worse" : "better",
                             detail::percent(std::fabs(change)), detail::percent(r.threshold));
    } else {
      r.result = verdict::unchanged;
      r.reason = what + fmt::format("a change of {}, within ±{}", detail::signed_percent(change),
                                    detail::percent(r.threshold));
    }
  }

  void judge_statistics(row& r, std::size_t nb, std::size_t nc) const {
    const double lo = *r.ci_lo, hi = *r.ci_hi;
    const double alpha = 1 - o_.confidence;
    const std::string ci = fmt::format("the {:g}% interval {}", o_.confidence * 100,
                                       detail::interval_text(r.ci_lo, r.ci_hi));
    if (nb < o_.min_samples || nc < o_.min_samples) {
      r.reason =
          fmt::format("too few samples: {} and {}, {} needed on each side", nb, nc, o_.min_samples);
      return;
    }
    const int direction = lo > 1 + r.threshold ? 1 : hi < 1 - r.threshold ? -1 : 0;
    const bool significant = *r.p_value < alpha;
    if (direction != 0 && significant) {
      const bool bad = worse(r, direction);
      r.result = bad ? verdict::regression : verdict::improvement;
      r.reason = fmt::format(
          "{} by {}: {} lies wholly beyond the {} threshold (p {})", bad ? "worse" : "better",
          detail::percent(std::fabs(r.ratio - 1)), ci, detail::percent(r.threshold),
          *r.p_value < 0.001 ? std::string("< 0.001") : "= " + detail::p_text(r.p_value));
      return;
    }
    if (lo >= 1 - r.requested && hi <= 1 + r.requested) {
      r.result = verdict::unchanged;
      r.reason = fmt::format("{} lies within ±{}", ci, detail::percent(r.requested));
      return;
    }
    if (direction != 0) {
      r.reason = fmt::format(
          "{} lies beyond the {} threshold but the Mann-Whitney test is not "
          "significant (p = {} >= {:.2g})",
          ci, detail::percent(r.threshold), detail::p_text(r.p_value), alpha);
    } else if (lo >= 1 - r.threshold && hi <= 1 + r.threshold) {
      r.reason =
          fmt::format("{} lies within {} (±{} = {:g} x {}) but not within ±{}: too noisy to tell",
                      ci, noise_name(r), detail::percent(r.threshold), o_.noise_multiple,
                      noise_text(r), detail::percent(r.requested));
    } else if (r.threshold > r.requested) {
      r.reason = fmt::format(
          "{} is neither within ±{} nor wholly beyond ±{} ({}): too noisy or too few "
          "samples to tell",
          ci, detail::percent(r.requested), detail::percent(r.threshold), noise_name(r));
    } else {
      r.reason = fmt::format("{} straddles the ±{} threshold: too noisy or too few samples to tell",
                             ci, detail::percent(r.threshold));
    }
  }

  const options& o_;
  std::uint64_t seed_;
};

row case_row(const result::scenario_result& s, const result::case_result& c) {
  row r;
  r.scenario = s.name;
  r.case_id = c.id;
  r.ratio = nan;
  r.gated = true;
  return r;
}

std::string status_text(const result::case_result& c) {
  std::string out = c.status == result::case_status::error
                        ? std::string("failed")
                        : std::string(result::to_string(c.status));
  if (!c.message.empty()) out += " (" + one_line(c.message) + ")";
  return out;
}

}  // namespace

std::string_view to_string(verdict v) noexcept {
  switch (v) {
    case verdict::regression:
      return "regression";
    case verdict::improvement:
      return "improvement";
    case verdict::unchanged:
      return "unchanged";
    case verdict::inconclusive:
      return "inconclusive";
    case verdict::failed:
      return "failed";
    case verdict::info:
      return "info";
  }
  return "?";
}

std::optional<fail_on> parse_fail_on(std::string_view text) noexcept {
  if (text == "regression") return fail_on::regression;
  if (text == "inconclusive") return fail_on::inconclusive;
  if (text == "never") return fail_on::never;
  return std::nullopt;
}

std::string_view to_string(fail_on f) noexcept {
  switch (f) {
    case fail_on::regression:
      return "regression";
    case fail_on::inconclusive:
      return "inconclusive";
    case fail_on::never:
      return "never";
  }
  return "?";
}

std::string_view to_string(threshold_source s) noexcept {
  switch (s) {
    case threshold_source::option:
      return "option";
    case threshold_source::gate:
      return "gate";
    case threshold_source::noise:
      return "noise";
  }
  return "?";
}

std::size_t comparison::count(verdict v, bool gated_only) const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [&](const row& r) {
    return r.result == v && (r.gated || !gated_only);
  }));
}

std::size_t comparison::gated_rows() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const row& r) { return r.gated; }));
}

int comparison::exit_code() const {
  if (settings.fail == fail_on::never) return exit_ok;
  if (count(verdict::regression) + count(verdict::failed) > 0) return exit_case_failed;
  if (gated_rows() == 0 && !settings.allow_empty) return exit_environment;
  if (settings.fail == fail_on::inconclusive) {
    const bool vanished = std::any_of(only_in_base.begin(), only_in_base.end(),
                                      [](const unpaired& u) { return u.gated; });
    if (count(verdict::inconclusive) > 0 || vanished) return exit_environment;
  }
  return exit_ok;
}

std::string comparison::summary_line() const {
  const std::size_t gated = gated_rows();
  std::string out = fmt::format("{} gated comparison{}", gated, gated == 1 ? "" : "s");
  std::vector<std::string> parts;
  const auto add = [&](verdict v, const char* one, const char* many) {
    const std::size_t n = count(v);
    if (n > 0) parts.push_back(fmt::format("{} {}", n, n == 1 ? one : many));
  };
  add(verdict::regression, "regression", "regressions");
  add(verdict::failed, "failed case", "failed cases");
  add(verdict::inconclusive, "inconclusive", "inconclusive");
  add(verdict::improvement, "improvement", "improvements");
  add(verdict::unchanged, "unchanged", "unchanged");
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? ": " : ", ") + parts[i];
  if (const std::size_t info = count(verdict::info, false); info > 0)
    out += fmt::format("; {} informative metric{}", info, info == 1 ? "" : "s");
  if (!only_in_base.empty()) out += fmt::format("; {} only in the baseline", only_in_base.size());
  if (!only_in_current.empty())
    out += fmt::format("; {} only in the current result", only_in_current.size());
  return out;
}

std::string comparison::outcome_line() const {
  const int code = exit_code();
  const std::size_t bad = count(verdict::regression) + count(verdict::failed);
  if (settings.fail == fail_on::never)
    return bad > 0 ? fmt::format(
                         "gate not enforced (--fail-on never): {} regression{} or failed "
                         "case{} reported; exit 0",
                         bad, bad == 1 ? "" : "s", bad == 1 ? "" : "s")
                   : "gate not enforced (--fail-on never); exit 0";
  if (code == exit_case_failed)
    return fmt::format("gate failed: {} gated regression{} or failed case{}; exit 1", bad,
                       bad == 1 ? "" : "s", bad == 1 ? "" : "s");
  if (code == exit_environment && gated_rows() == 0)
    return fmt::format(
        "gate failed: nothing to compare: no gated metric in a case the two results share "
        "(baseline: {}; current: {}); exit 3 (--allow-empty passes it)",
        names_or_none(base.scenarios), names_or_none(current.scenarios));
  if (code == exit_environment)
    return "gate failed: inconclusive or vanished gated metrics under --fail-on inconclusive; "
           "exit 3";
  return "gate passed: no gated regression; exit 0";
}

std::string environment_mismatch(const result::run_result& base,
                                 const result::run_result& current) {
  std::vector<std::string> why;
  const auto bb = base.backend_name(), cb = current.backend_name();
  if (!bb.empty() && !cb.empty() && bb != cb)
    why.push_back(fmt::format("backend \"{}\" vs \"{}\"", bb, cb));
  const auto bu = device_field(base, "uuid"), cu = device_field(current, "uuid");
  const auto bn = device_field(base, "name"), cn = device_field(current, "name");
  if (!bu.empty() && !cu.empty()) {
    if (bu != cu) why.push_back(fmt::format("device {} \"{}\" vs {} \"{}\"", bu, bn, cu, cn));
  } else if (!bn.empty() && !cn.empty() && bn != cn) {
    why.push_back(fmt::format("device \"{}\" vs \"{}\"", bn, cn));
  }
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

namespace {

// A case's check against PyTorch in a few words: "reproduced", "12 of 461 then ...", "not
// checked: why"; none when the case replayed no snapshot.
std::optional<std::pair<bool, std::string>> replay_check(const result::case_result& c) {
  const auto d = c.extra.find("pytorch_decisions");
  if (d == c.extra.end() || !d->is_object()) return std::nullopt;
  if (!d->value("checked", false))
    return std::pair{false, "not checked: " + d->value("why_not", std::string("?"))};
  return std::pair{d->value("reproduced", false), d->value("summary", std::string())};
}

}  // namespace

std::vector<std::string> replay_notes(const result::run_result& base,
                                      const result::run_result& current,
                                      const std::string& base_label,
                                      const std::string& current_label) {
  std::vector<std::string> notes;
  std::size_t both_exact = 0;
  const case_index base_cases = index_cases(base, base_label);
  for (const auto& s : current.scenarios)
    for (const auto& c : s.cases) {
      const auto paired = base_cases.find({s.name, c.id});
      if (paired == base_cases.end()) continue;  // compare's "only in" already says so
      const auto now = replay_check(c);
      const auto before = replay_check(*paired->second.c);
      if (!now && !before) continue;
      if (now && before && now->first && before->first) {
        ++both_exact;
        continue;
      }
      const std::string at = s.name + " " + (c.id.empty() ? std::string("default") : c.id);
      notes.push_back(fmt::format("{}: {}: {} | {}: {}", at, base_label,
                                  before ? before->second : std::string("no replay of a snapshot"),
                                  current_label,
                                  now ? now->second : std::string("no replay of a snapshot")));
    }
  if (both_exact > 0)
    notes.insert(
        notes.begin(),
        fmt::format("{} case(s) reproduce PyTorch's decisions exactly on both sides", both_exact));
  return notes;
}

std::vector<std::string> tune_notes(const result::run_result& base,
                                    const result::run_result& current,
                                    const std::string& base_label,
                                    const std::string& current_label) {
  if (!base.tune && !current.tune) return {};
  if (!base.tune || !current.tune)
    return {
        fmt::format("only {} is a pinbench tune result: its answer has nothing to be "
                    "compared with",
                    base.tune ? base_label : current_label)};
  const auto& b = *base.tune;
  const auto& c = *current.tune;
  if (b.question != c.question)
    return {fmt::format("{} answers tune {}, {} tune {}: different questions", base_label,
                        to_string(b.question), current_label, to_string(c.question))};
  // The setting an answer gives: its first line of code, without the comment that carries
  // measured figures; an answer that is a comment alone (nothing found) is taken whole.
  const auto first_line = [](const std::string& text) {
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      if (!line.empty() && line.front() != '#') return line.substr(0, line.find("   #"));
      at = end + 1;
    }
    return text.substr(0, text.find('\n'));
  };
  std::vector<std::string> notes;
  if (first_line(b.answer) == first_line(c.answer))
    notes.push_back(fmt::format("tune {}: the same answer on both sides: {}", to_string(b.question),
                                first_line(c.answer)));
  else
    notes.push_back(fmt::format("tune {}: the answer changed: {}: {} | {}: {}",
                                to_string(b.question), base_label, first_line(b.answer),
                                current_label, first_line(c.answer)));
  if (b.goal_met != c.goal_met)
    notes.push_back(fmt::format("tune {}: the goal is met in {} only", to_string(b.question),
                                b.goal_met ? base_label : current_label));
  // Asked differently (a capacity, a target): the answers are not about the same thing.
  // What the run found rather than what was asked is left out.
  static const std::vector<std::string> run_facts = {
      "jobs",      "replays",           "notes",           "trace",
      "images",    "capacity_from",     "device_from",     "pytorch_from",
      "not_tried", "pytorch_decisions", "live_bytes_peak", "snapshot_oom"};
  for (const auto& [key, value] : c.inputs.items()) {
    if (std::find(run_facts.begin(), run_facts.end(), key) != run_facts.end()) continue;
    if (!b.inputs.contains(key) || b.inputs.at(key) == value) continue;
    notes.push_back(fmt::format("tune {}: asked with a different {}: {} in {}, {} in {}",
                                to_string(b.question), key, b.inputs.at(key).dump(), base_label,
                                value.dump(), current_label));
  }
  return notes;
}

comparison compare(const result::run_result& base, const result::run_result& current,
                   const options& opts, const std::string& base_label,
                   const std::string& current_label) {
  comparison out;
  out.base = describe(base, base_label);
  out.current = describe(current, current_label);
  out.settings = opts;
  out.env_mismatch = environment_mismatch(base, current);
  if (!out.env_mismatch.empty()) {
    if (!opts.allow_env_mismatch)
      throw incomparable_error(fmt::format(
          "incomparable results: {} and {} differ: {} (--allow-env-mismatch compares them anyway)",
          base_label, current_label, out.env_mismatch));
    out.warnings.push_back("compared across environments (--allow-env-mismatch): " +
                           out.env_mismatch);
  }
  out.tune_notes = tune_notes(base, current, base_label, current_label);
  out.replay_notes = replay_notes(base, current, base_label, current_label);
  if (base.interrupted) out.warnings.push_back(base_label + " was interrupted: it may lack cases");
  if (current.interrupted)
    out.warnings.push_back(current_label + " was interrupted: it may lack cases");

  // A --metric that neither side has is a typo, not an empty comparison.
  for (const auto& name : opts.metrics) {
    std::vector<std::string> known;
    bool found = false;
    for (const auto* r : {&base, &current})
      for (const auto& s : r->scenarios)
        for (const auto& c : s.cases)
          for (const auto& m : c.metrics) {
            found = found || m.name == name;
            if (std::find(known.begin(), known.end(), m.name) == known.end())
              known.push_back(m.name);
          }
    if (!found)
      throw input_error(
          {}, "--metric",
          "no metric named \"" + name + "\" in either result" + did_you_mean(name, known));
  }

  const auto base_cases = index_cases(base, base_label);
  const auto current_cases = index_cases(current, current_label);
  const auto keep = [&](const result::case_result& c) {
    return opts.metrics.empty() || has_wanted_metric(c, opts);
  };

  for (const auto& s : base.scenarios) {
    for (const auto& bc : s.cases) {
      if (!keep(bc)) continue;
      const auto it = current_cases.find({s.name, bc.id});
      if (it == current_cases.end()) {
        out.only_in_base.push_back({s.name, bc.id, {}, has_gated_metric(bc, opts)});
        continue;
      }
      const auto& cs = *it->second.scenario;
      const auto& cc = *it->second.c;
      if (bc.status != result::case_status::ok || cc.status != result::case_status::ok) {
        row r = case_row(s, bc);
        r.gated = has_gated_metric(bc, opts) || has_gated_metric(cc, opts);
        if (bc.status == result::case_status::ok && cc.status == result::case_status::error) {
          r.result = verdict::failed;
          r.reason = "failed in the current result: " + one_line(cc.message);
        } else if (bc.status == result::case_status::ok) {
          r.reason = "the current case was " + status_text(cc);
        } else if (cc.status == result::case_status::ok) {
          r.reason = "the baseline case was " + status_text(bc) + ": nothing to compare with";
        } else {
          r.reason =
              "not ok on either side: baseline " + status_text(bc) + ", current " + status_text(cc);
        }
        out.rows.push_back(std::move(r));
        continue;
      }
      for (const auto& bm : bc.metrics) {
        if (!wanted(opts, bm.name)) continue;
        const auto* cm = cc.find(bm.name);
        if (cm == nullptr) {
          out.only_in_base.push_back(
              {s.name, bc.id, bm.name, bm.better != result::direction::none});
          continue;
        }
        row r;
        r.scenario = s.name;
        r.case_id = bc.id;
        r.metric = bm.name;
        r.unit = bm.unit;
        r.better = bm.better == result::direction::none ? cm->better : bm.better;
        const double gate = gate_threshold(&cs, &s, bm.name);
        r.requested = std::max(opts.threshold, gate);
        r.source = gate > opts.threshold ? threshold_source::gate : threshold_source::option;
        const std::uint64_t seed = row_seed(opts.seed, s.name + '\n' + bc.id + '\n' + bm.name);
        judge(opts, seed).run(r, bm, *cm);
        out.rows.push_back(std::move(r));
      }
      for (const auto& cm : cc.metrics)
        if (wanted(opts, cm.name) && bc.find(cm.name) == nullptr)
          out.only_in_current.push_back(
              {s.name, bc.id, cm.name, cm.better != result::direction::none});
    }
  }
  for (const auto& s : current.scenarios)
    for (const auto& cc : s.cases)
      if (keep(cc) && !base_cases.contains({s.name, cc.id}))
        out.only_in_current.push_back({s.name, cc.id, {}, has_gated_metric(cc, opts)});
  return out;
}

}  // namespace pinbench::gate
