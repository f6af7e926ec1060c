// A result against absolute references (gate/reference.hpp): the REFS file read and checked,
// every referenced figure judged, and a REFS file made from a known-good result.
#include "gate/reference.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_limits.hpp"
#include "core/json_path.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "gate/wording.hpp"

namespace pinbench::gate {

namespace {

using ojson = nlohmann::ordered_json;

/// REFS files are small; a megabyte holds thousands of references.
constexpr std::uint64_t max_references_file_bytes = std::uint64_t{64} << 20;

// ---- reading ------------------------------------------------------------------------------------

class reader {
 public:
  explicit reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw input_error(path_, where, what);
  }

  const ojson& object(const ojson& v, const std::string& where) const {
    if (!v.is_object()) fail(where, "expected an object, got " + kind_of(v));
    return v;
  }

  // Every key of `v` is one of `allowed`.
  void known_keys(const ojson& v, const std::string& where,
                  const std::vector<std::string>& allowed) const {
    for (const auto& [key, value] : v.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(join(where, key),
             "unknown key; expected " + quoted_list(allowed) + did_you_mean(key, allowed));
  }

  // A string member; `required` ones must be there and, unless `may_be_empty`, not empty.
  std::string text(const ojson& v, const std::string& where, const char* key, bool required,
                   bool may_be_empty = false) const {
    const auto it = v.find(key);
    if (it == v.end()) {
      if (required) fail(join(where, key), "missing; expected a string");
      return {};
    }
    if (!it->is_string()) fail(join(where, key), "expected a string, got " + kind_of(*it));
    std::string s = it->get<std::string>();
    if (s.empty() && !may_be_empty) fail(join(where, key), "expected a non-empty string");
    return s;
  }

  // A number or null member (absent = null).
  std::optional<double> fraction(const ojson& v, const std::string& where, const char* key) const {
    const auto it = v.find(key);
    if (it == v.end() || it->is_null()) return std::nullopt;
    if (!it->is_number())
      fail(join(where, key),
           "expected a fraction of the value (such as -0.1) or null, got " + kind_of(*it));
    return it->get<double>();
  }

  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  static std::string kind_of(const ojson& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
  }

 private:
  std::string path_;
};

std::string selector_text(const system_selector& s) {
  std::vector<std::string> parts;
  if (!s.device.empty()) parts.push_back("device " + s.device);
  if (!s.backend.empty()) parts.push_back("backend " + s.backend);
  if (!s.host.empty()) parts.push_back("host " + s.host);
  return parts.empty() ? std::string("any system") : fmt::format("{}", fmt::join(parts, ", "));
}

reference read_reference(const reader& in, const ojson& v, const std::string& where) {
  in.object(v, where);
  in.known_keys(v, where, {"scenario", "case", "metric", "value", "lower", "upper", "unit"});
  reference ref;
  ref.where = where;
  ref.scenario = in.text(v, where, "scenario", true);
  ref.case_pattern = in.text(v, where, "case", false);
  if (v.find("case") == v.end()) ref.case_pattern = "*";
  if (ref.case_pattern.empty()) in.fail(where + ".case", "expected a case id or a pattern");
  ref.metric = in.text(v, where, "metric", true);
  ref.unit = in.text(v, where, "unit", true, true);
  const auto value = v.find("value");
  if (value == v.end()) in.fail(where + ".value", "missing; expected the reference figure");
  if (!value->is_number())
    in.fail(where + ".value", "expected a number, got " + reader::kind_of(*value));
  ref.value = value->get<double>();
  ref.lower = in.fraction(v, where, "lower");
  ref.upper = in.fraction(v, where, "upper");
  // ReFrame's rules: the lower bound below the value and, for a value of 0 or more, not below
  // 0 (lower >= -1); the upper bound above it.
  if (ref.lower && (*ref.lower > 0 || (ref.value >= 0 && *ref.lower < -1)))
    in.fail(where + ".lower",
            fmt::format("expected a fraction in [-1, 0] (-0.1: 10% below the value), got {}",
                        exact_number(*ref.lower)));
  if (ref.upper && *ref.upper < 0)
    in.fail(where + ".upper",
            fmt::format("expected a fraction of 0 or more (0.1: 10% above the value), got {}",
                        exact_number(*ref.upper)));
  if (ref.value < 0 && ref.upper && *ref.upper > 1)
    in.fail(where + ".upper",
            fmt::format("expected a fraction in [0, 1] for a negative value, got {}",
                        exact_number(*ref.upper)));
  return ref;
}

// ---- judging ------------------------------------------------------------------------------------

// What a case ran on: the run's environment, or under a launch the rank's own entry.
struct system_facts {
  std::string backend, device, host;
};

system_facts facts_of(const result::run_result& r, const result::case_result& c) {
  system_facts f{r.backend_name(), r.environment_text({"device", "name"}),
                 r.environment_text({"host", "hostname"})};
  if (!c.rank || !r.ranks.is_array()) return f;
  for (const auto& e : r.ranks) {
    if (!e.is_object() || e.value("rank", -1) != *c.rank) continue;
    if (const auto* b = find_path(e, {"backend"}); b != nullptr && b->is_string())
      f.backend = b->get<std::string>();
    if (const auto* d = find_path(e, {"device", "name"}); d != nullptr && d->is_string())
      f.device = d->get<std::string>();
    if (const auto* h = find_path(e, {"host"}); h != nullptr && h->is_string())
      f.host = h->get<std::string>();
  }
  return f;
}

bool selects(const system_selector& s, const system_facts& f) {
  return (s.device.empty() || glob_match(s.device, f.device)) &&
         (s.backend.empty() || s.backend == f.backend) &&
         (s.host.empty() || glob_match(s.host, f.host));
}

// "-10%" / "+5%" of a bound's fraction, for reasons.
std::string fraction_text(double f) {
  return detail::signed_percent(f);
}

void judge_figure(reference_check& check, const result::metric& m) {
  const summary s = result::finite_summary(m);
  check.samples = s.n;
  if (s.n == 0) {
    check.outcome = check_outcome::missing;
    check.reason = "no finite sample of " + m.name;
    return;
  }
  check.measured = s.median;
  const double v = s.median;
  const auto reason = [&](double bound, double fraction, const char* side) {
    check.excess = bound != 0 ? std::fabs(v / bound - 1) : HUGE_VAL;
    const std::string by = bound != 0 ? detail::percent(check.excess) + " " : std::string();
    return fmt::format(
        "{} is {}{} the {} bound {} (reference {} {})",
        format_value(v, m.unit, unit_place::in_cell), by, side[0] == 'l' ? "below" : "above", side,
        format_value(bound, m.unit, unit_place::in_cell),
        format_value(check.reference_value, m.unit, unit_place::in_cell), fraction_text(fraction));
  };
  if (check.lower_bound && v < *check.lower_bound) {
    check.outcome = check_outcome::outside;
    check.reason = reason(*check.lower_bound, *check.lower, "lower");
  } else if (check.upper_bound && v > *check.upper_bound) {
    check.outcome = check_outcome::outside;
    check.reason = reason(*check.upper_bound, *check.upper, "upper");
  } else {
    check.outcome = check_outcome::inside;
  }
}

// ---- init -------------------------------------------------------------------------------------

// `x` to `digits` significant digits, rounded away from zero when `outward` (a bound that
// never shrinks), else to nearest.
double round_significant(double x, int digits, bool outward) {
  if (x == 0 || !std::isfinite(x)) return x;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  const double scaled = x * scale;
  const double r =
      outward ? (x > 0 ? std::ceil(scaled - 1e-9) : std::floor(scaled + 1e-9)) : std::round(scaled);
  return r / scale;
}

// The median of each round's finite samples (the metric's rounds), when it has more than one.
std::vector<double> round_medians(const result::metric& m) {
  std::map<std::uint32_t, std::vector<double>> by_round;
  if (m.rounds.size() != m.samples.size()) return {};
  for (std::size_t i = 0; i < m.samples.size(); ++i)
    if (std::isfinite(m.samples[i])) by_round[m.rounds[i]].push_back(m.samples[i]);
  if (by_round.size() < 2) return {};
  std::vector<double> out;
  out.reserve(by_round.size());
  for (auto& [round, values] : by_round) out.push_back(summarize(values).median);
  return out;
}

}  // namespace

std::optional<double> reference::lower_bound() const {
  if (!lower) return std::nullopt;
  return value + *lower * std::fabs(value);
}

std::optional<double> reference::upper_bound() const {
  if (!upper) return std::nullopt;
  return value + *upper * std::fabs(value);
}

reference_file parse_references(const ojson& doc, const std::string& path) {
  const reader in(path);
  in.object(doc, "");
  in.known_keys(doc, "", {"schema", "systems"});
  if (const std::string schema = in.text(doc, "", "schema", true); schema != references_schema)
    in.fail("schema", fmt::format("expected \"{}\", got \"{}\"", references_schema, schema));
  const auto systems = doc.find("systems");
  if (systems == doc.end() || !systems->is_array() || systems->empty())
    in.fail("systems", "expected a non-empty array of {\"select\", \"references\"}");
  reference_file out;
  out.path = path;
  for (std::size_t i = 0; i < systems->size(); ++i) {
    const std::string where = fmt::format("systems[{}]", i);
    const ojson& sys = in.object((*systems)[i], where);
    in.known_keys(sys, where, {"name", "select", "references", "source"});
    reference_system rs;
    rs.where = where;
    const auto select = sys.find("select");
    if (select == sys.end())
      in.fail(where + ".select",
              "missing; expected {\"device\", \"backend\", \"host\"} ({} for any system)");
    in.object(*select, where + ".select");
    in.known_keys(*select, where + ".select", {"device", "backend", "host"});
    rs.select.device = in.text(*select, where + ".select", "device", false);
    rs.select.backend = in.text(*select, where + ".select", "backend", false);
    rs.select.host = in.text(*select, where + ".select", "host", false);
    if (!rs.select.backend.empty() && !device::parse_platform_kind(rs.select.backend))
      in.fail(where + ".select.backend",
              "expected " +
                  quoted_list({std::string(device::to_string(device::platform_kind::cuda)),
                               std::string(device::to_string(device::platform_kind::host))}) +
                  ", got \"" + rs.select.backend + "\"");
    rs.name = in.text(sys, where, "name", false);
    if (rs.name.empty()) rs.name = selector_text(rs.select);
    const auto refs = sys.find("references");
    if (refs == sys.end() || !refs->is_array() || refs->empty())
      in.fail(where + ".references",
              "expected a non-empty array of {\"scenario\", \"case\", \"metric\", \"value\", "
              "\"lower\", \"upper\", \"unit\"}");
    for (std::size_t k = 0; k < refs->size(); ++k)
      rs.references.push_back(
          read_reference(in, (*refs)[k], fmt::format("{}.references[{}]", where, k)));
    out.systems.push_back(std::move(rs));
  }
  return out;
}

reference_file read_references(const std::string& path) {
  return parse_references(read_json_document(path, max_references_file_bytes), path);
}

std::string_view to_string(check_outcome o) noexcept {
  switch (o) {
    case check_outcome::inside:
      return "inside";
    case check_outcome::outside:
      return "outside";
    case check_outcome::failed:
      return "failed";
    case check_outcome::missing:
      return "missing";
  }
  return "?";
}

std::size_t reference_report::count(check_outcome o) const {
  return static_cast<std::size_t>(std::count_if(
      checks.begin(), checks.end(), [o](const reference_check& c) { return c.outcome == o; }));
}

int reference_report::exit_code() const {
  if (systems.empty()) return exit_environment;
  if (count(check_outcome::outside) + count(check_outcome::failed) > 0) return exit_case_failed;
  if (count(check_outcome::inside) == 0) return exit_environment;
  if (settings.strict && count(check_outcome::missing) > 0) return exit_environment;
  return exit_ok;
}

std::string reference_report::outcome_line() const {
  const auto system = [&] {
    std::string s = "backend " + (backend.empty() ? std::string("unknown") : backend);
    if (!device.empty()) s += ", device \"" + device + "\"";
    if (!host.empty()) s += ", host \"" + host + "\"";
    return s;
  };
  if (systems.empty())
    return fmt::format("no system of {} applies to this result ({}); the file has: {} (exit 3)",
                       references_path, system(), fmt::join(selectors, "; "));
  const std::size_t outside = count(check_outcome::outside), failed = count(check_outcome::failed);
  if (outside + failed > 0) {
    const reference_check* first = nullptr;
    for (const auto& c : checks) {
      if (c.outcome == check_outcome::failed) {
        first = &c;
        break;
      }
      if (c.outcome == check_outcome::outside && (first == nullptr || c.excess > first->excess))
        first = &c;
    }
    return fmt::format(
        "{} of {} referenced figure(s) outside their references{}: {} {} {}{}: "
        "{} (exit 1)",
        outside + failed, checks.size(),
        failed > 0 ? fmt::format(" ({} failed)", failed) : std::string(),
        first->outcome == check_outcome::failed ? "first" : "farthest", first->scenario,
        first->case_id, first->outcome == check_outcome::failed ? "" : " " + first->metric,
        first->reason);
  }
  if (count(check_outcome::inside) == 0)
    return fmt::format(
        "nothing referenced was measured: {} reference(s) of {} apply, none has a "
        "figure in this result (exit 3)",
        checks.size() + not_run.size(), fmt::join(systems, ", "));
  const std::size_t missing = count(check_outcome::missing);
  if (settings.strict && missing > 0)
    return fmt::format("{} referenced figure(s) missing, --strict (exit 3)", missing);
  return fmt::format("all {} referenced figure(s) inside their references{} (exit 0)",
                     count(check_outcome::inside),
                     missing > 0 ? fmt::format("; {} missing", missing) : std::string());
}

reference_report check_references(const result::run_result& r, const std::string& result_path,
                                  const reference_file& refs, const check_options& opts) {
  reference_report rep;
  rep.result_path = result_path;
  rep.references_path = refs.path;
  rep.settings = opts;
  rep.backend = r.backend_name();
  rep.device = r.environment_text({"device", "name"});
  rep.host = r.environment_text({"host", "hostname"});

  // The systems a result ran on: its environment, or every rank's.
  std::vector<system_facts> ran_on{{rep.backend, rep.device, rep.host}};
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases)
      if (c.rank) ran_on.push_back(facts_of(r, c));

  for (const auto& sys : refs.systems) {
    rep.selectors.push_back(sys.name == selector_text(sys.select)
                                ? sys.name
                                : sys.name + " (" + selector_text(sys.select) + ")");
    if (std::none_of(ran_on.begin(), ran_on.end(),
                     [&](const system_facts& f) { return selects(sys.select, f); }))
      continue;
    rep.systems.push_back(sys.name);
    for (const auto& ref : sys.references) {
      const auto scenario = std::find_if(r.scenarios.begin(), r.scenarios.end(),
                                         [&](const auto& s) { return s.name == ref.scenario; });
      if (scenario == r.scenarios.end()) {
        rep.not_run.push_back(ref.scenario + ": " + ref.case_pattern + " " + ref.metric);
        continue;
      }
      reference_check base;
      base.system = sys.name;
      base.scenario = ref.scenario;
      base.metric = ref.metric;
      base.unit = ref.unit;
      base.reference_value = ref.value;
      base.lower = ref.lower;
      base.upper = ref.upper;
      base.lower_bound = ref.lower_bound();
      base.upper_bound = ref.upper_bound();
      base.where = ref.where;
      bool matched = false;
      for (const auto& c : scenario->cases) {
        std::string id(result::id_without_rank(c));
        if (id.empty()) id = "default";
        if (!glob_match(ref.case_pattern, id)) continue;
        if (!selects(sys.select, facts_of(r, c))) continue;
        matched = true;
        reference_check check = base;
        check.case_id = c.id.empty() ? "default" : c.id;
        const result::metric* m = c.find(ref.metric);
        if (m != nullptr && m->unit != ref.unit)
          throw input_error(refs.path, ref.where + ".unit",
                            fmt::format("expected \"{}\", the unit of {} in {}, got \"{}\"",
                                        m->unit, ref.metric, result_path, ref.unit));
        if (c.status == result::case_status::error) {
          check.outcome = check_outcome::failed;
          check.reason = "the case failed: " + one_line(c.message);
        } else if (c.status != result::case_status::ok) {
          check.outcome = check_outcome::missing;
          check.reason = fmt::format("the case was {}{}", result::to_string(c.status),
                                     c.message.empty() ? "" : ": " + one_line(c.message));
        } else if (m == nullptr) {
          check.outcome = check_outcome::missing;
          check.reason = "the case has no metric " + ref.metric;
        } else {
          judge_figure(check, *m);
        }
        rep.checks.push_back(std::move(check));
      }
      if (!matched) {
        reference_check check = base;
        check.case_id = ref.case_pattern;
        check.outcome = check_outcome::missing;
        check.reason = "no case of " + ref.scenario + " matches \"" + ref.case_pattern + "\"";
        rep.checks.push_back(std::move(check));
      }
    }
  }
  return rep;
}

ojson init_references(
    const result::run_result& r, const init_options& opts,
    const std::function<std::vector<std::string>(const result::scenario_result&)>& headlines,
    std::size_t& left_out) {
  left_out = 0;
  const std::string backend = r.backend_name(), device = r.environment_text({"device", "name"});
  ojson select = ojson::object();
  if (!device.empty()) select["device"] = glob_quote(device);
  if (!backend.empty()) select["backend"] = backend;
  if (!opts.host.empty()) select["host"] = opts.host;

  ojson references = ojson::array();
  for (const auto& s : r.scenarios) {
    const auto wanted = headlines(s);
    // Every rank's case of one id pooled: one reference per id and metric.
    std::vector<std::string> ids;
    std::map<std::string, std::vector<const result::case_result*>> by_id;
    for (const auto& c : s.cases) {
      if (c.status != result::case_status::ok) continue;
      std::string id(result::id_without_rank(c));
      if (id.empty()) id = "default";
      if (by_id[id].empty()) ids.push_back(id);
      by_id[id].push_back(&c);
    }
    for (const auto& id : ids)
      for (const auto& name : wanted) {
        result::metric pooled;
        bool found = false;
        for (const auto* c : by_id[id]) {
          const result::metric* m = c->find(name);
          if (m == nullptr || m->better == result::direction::none) continue;
          if (!found) {
            pooled = *m;
            found = true;
          } else {
            pooled.samples.insert(pooled.samples.end(), m->samples.begin(), m->samples.end());
            pooled.rounds.clear();  // rounds of different ranks are not one run's rounds
          }
        }
        if (!found) continue;
        const summary sum = result::finite_summary(pooled);
        if (sum.n == 0) continue;
        const double v = sum.median;
        ojson ref{{"scenario", s.name}, {"case", glob_quote(id)}, {"metric", pooled.name}};
        if (pooled.deterministic) {
          ref["value"] = v;
          ref["lower"] = 0;
          ref["upper"] = 0;
        } else if (v == 0) {
          ++left_out;  // a fraction of 0 bounds nothing
          continue;
        } else {
          double below = v - sum.q1, above = sum.q3 - v;
          for (const double m : round_medians(pooled)) {
            below = std::max(below, v - m);
            above = std::max(above, m - v);
          }
          const double a = std::fabs(v);
          double lower = -std::max(opts.floor, opts.widen * below / a);
          if (v > 0) lower = std::max(lower, -1.0);
          const double upper = std::max(opts.floor, opts.widen * above / a);
          const bool higher = pooled.better == result::direction::higher;
          ref["value"] = round_significant(v, 6, false);
          ref["lower"] =
              opts.one_sided && !higher ? ojson(nullptr) : ojson(round_significant(lower, 3, true));
          ref["upper"] =
              opts.one_sided && higher ? ojson(nullptr) : ojson(round_significant(upper, 3, true));
        }
        ref["unit"] = pooled.unit;
        references.push_back(std::move(ref));
      }
  }
  ojson system = ojson::object();
  system["name"] = !opts.name.empty() ? opts.name
                   : device.empty()   ? backend + " backend"
                                      : fmt::format("{}, {} backend", device, backend);
  system["select"] = std::move(select);
  system["source"] = {{"result", opts.source},
                      {"created", r.created},
                      {"pinbench", r.tool_git.empty() ? r.tool_version : r.tool_git},
                      {"widen", opts.widen},
                      {"floor", opts.floor}};
  system["references"] = std::move(references);
  ojson doc = ojson::object();
  doc["schema"] = references_schema;
  doc["systems"] = ojson::array({std::move(system)});
  return doc;
}

}  // namespace pinbench::gate
