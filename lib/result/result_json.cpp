// The pinbench.result/1 document: written in a fixed key order, read back leniently (unknown
// fields ignored) but strictly typed, with errors naming file and JSON path.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/text.hpp"
#include "result/result_io.hpp"

namespace pinbench::result {

namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr std::string_view schema_name = "pinbench.result/1";

// ---- writing ------------------------------------------------------------------------------

ojson number(double v) {
  return std::isfinite(v) ? ojson(v) : ojson(nullptr);
}

// Free-form blocks (params, environment, ...) may hold a NaN an engine computed; write null.
ojson clean(const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      ojson out = ojson::object();
      for (const auto& [k, v] : j.items()) out[k] = clean(v);
      return out;
    }
    case json::value_t::array: {
      ojson out = ojson::array();
      for (const auto& v : j) out.push_back(clean(v));
      return out;
    }
    case json::value_t::number_float:
      return number(j.get<double>());
    default:
      return ojson(j);
  }
}

bool has_content(const json& j) {
  return !j.is_null() && !(j.is_structured() && j.empty());
}

ojson metric_json(const metric& m) {
  const auto s = finite_summary(m);
  ojson samples = ojson::array();
  for (double x : m.samples) samples.push_back(number(x));
  ojson out{{"unit", m.unit}, {"better", to_string(m.better)}};
  // Only when true: an engine's promise, absent from every timed metric.
  if (m.deterministic) out["deterministic"] = true;
  out["summary"] = ojson{{"n", s.n},
                         {"median", number(s.median)},
                         {"mean", number(s.mean)},
                         {"min", number(s.min)},
                         {"max", number(s.max)},
                         {"q1", number(s.q1)},
                         {"q3", number(s.q3)},
                         {"stdev", number(s.stdev)}};
  out["samples"] = std::move(samples);
  if (!m.rounds.empty()) out["rounds"] = m.rounds;
  return out;
}

ojson case_json(const case_result& c) {
  ojson out = ojson::object();
  out["id"] = c.id;
  if (c.rank) out["rank"] = *c.rank;
  out["params"] = c.params.is_null() ? ojson::object() : clean(c.params);
  out["status"] = to_string(c.status);
  if (!c.message.empty()) out["message"] = c.message;
  out["stop_reason"] = std::string(to_string(c.stopped));
  out["elapsed_s"] = number(c.elapsed_s);
  if (!c.warnings.empty()) out["warnings"] = c.warnings;
  if (has_content(c.extra)) out["info"] = clean(c.extra);
  ojson metrics = ojson::object();
  for (const auto& m : c.metrics) metrics[m.name] = metric_json(m);
  out["metrics"] = std::move(metrics);
  return out;
}

ojson scenario_json(const scenario_result& s) {
  ojson out = ojson::object();
  out["name"] = s.name;
  out["description"] = s.description;
  out["kind"] = s.kind;
  out["source"] = s.source;
  if (has_content(s.gate)) out["gate"] = clean(s.gate);
  if (!s.verdict.empty()) out["verdict"] = s.verdict;
  ojson cases = ojson::array();
  for (const auto& c : s.cases) cases.push_back(case_json(c));
  out["cases"] = std::move(cases);
  return out;
}

// ---- reading ------------------------------------------------------------------------------

std::string member_path(const std::string& parent, const std::string& key) {
  const bool plain = !key.empty() && !std::isdigit(static_cast<unsigned char>(key.front())) &&
                     std::all_of(key.begin(), key.end(), [](char ch) {
                       return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                     });
  // Metric names like "allocated_bytes.all.peak" would read as nested keys without brackets.
  if (!plain) return parent + "[" + json(key).dump() + "]";
  return parent.empty() ? key : parent + "." + key;
}

std::string index_path(const std::string& parent, std::size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

// What was found, for "expected X, got Y".
std::string describe(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::object:
      return "an object";
    case ojson::value_t::array:
      return "an array";
    case ojson::value_t::string:
      return ojson(truncate(v.get<std::string>(), 40)).dump();
    default:
      return v.dump();
  }
}

class reader {
 public:
  explicit reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw input_error(source_, path, message);
  }
  [[noreturn]] void mistyped(const std::string& path, std::string_view expected,
                             const ojson& got) const {
    fail(path, "expected " + std::string(expected) + ", got " + describe(got));
  }

  // The member `key` of `obj`, or nullptr when absent; `required` turns absence into an error.
  const ojson* member(const ojson& obj, const std::string& path, const char* key,
                      std::string_view expected, bool required) const {
    const auto it = obj.find(key);
    if (it == obj.end()) {
      if (required)
        fail(member_path(path, key), "missing (expected " + std::string(expected) + ")");
      return nullptr;
    }
    return &*it;
  }

  std::string string(const ojson& obj, const std::string& path, const char* key, bool required,
                     std::string fallback = {}) const {
    const auto* v = member(obj, path, key, "a string", required);
    if (v == nullptr) return fallback;
    if (!v->is_string()) mistyped(member_path(path, key), "a string", *v);
    return v->get<std::string>();
  }

  // A number, or null for a value that was not finite when written.
  double number(const ojson& v, const std::string& path) const {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) mistyped(path, "a number", v);
    return v.get<double>();
  }

  const ojson& object(const ojson& v, const std::string& path) const {
    if (!v.is_object()) mistyped(path, "an object", v);
    return v;
  }

  const ojson& array(const ojson& v, const std::string& path) const {
    if (!v.is_array()) mistyped(path, "an array", v);
    return v;
  }

  // An optional object member as nlohmann::json (the model's type for free-form blocks).
  json block(const ojson& obj, const std::string& path, const char* key, json fallback) const {
    const auto* v = member(obj, path, key, "an object", false);
    if (v == nullptr) return fallback;
    return json(object(*v, member_path(path, key)));
  }

  std::string one_of(const ojson& obj, const std::string& path, const char* key,
                     std::initializer_list<std::string_view> allowed, std::string fallback) const {
    const auto* v = member(obj, path, key, "a string", false);
    if (v == nullptr) return fallback;
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "" : ", ") + ojson(std::string(a)).dump();
    const auto p = member_path(path, key);
    if (!v->is_string()) mistyped(p, "one of " + list, *v);
    auto s = v->get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
      mistyped(p, "one of " + list, *v);
    return s;
  }

  result::metric metric(const ojson& v, const std::string& path, const std::string& name) const {
    object(v, path);
    result::metric m;
    m.name = name;
    m.unit = string(v, path, "unit", false);
    m.better = *direction_from(one_of(v, path, "better", {"higher", "lower", ""}, ""));
    if (const auto* samples = member(v, path, "samples", "an array", false)) {
      const auto sp = member_path(path, "samples");
      array(*samples, sp);
      for (std::size_t i = 0; i < samples->size(); ++i)
        m.samples.push_back(number((*samples)[i], index_path(sp, i)));
    }
    if (const auto* d = member(v, path, "deterministic", "a boolean", false)) {
      if (!d->is_boolean()) mistyped(member_path(path, "deterministic"), "true or false", *d);
      m.deterministic = d->get<bool>();
    }
    if (const auto* rounds = member(v, path, "rounds", "an array", false)) {
      const auto rp = member_path(path, "rounds");
      array(*rounds, rp);
      if (rounds->size() != m.samples.size())
        mistyped(rp, fmt::format("one round per sample ({})", m.samples.size()), *rounds);
      for (std::size_t i = 0; i < rounds->size(); ++i) {
        const auto& x = (*rounds)[i];
        if (!x.is_number_unsigned() || x.get<std::uint64_t>() > 1'000'000)
          mistyped(index_path(rp, i), "a round number from 0", x);
        m.rounds.push_back(x.get<std::uint32_t>());
      }
    }
    return m;
  }

  result::case_result case_result(const ojson& v, const std::string& path) const {
    object(v, path);
    result::case_result c;
    c.id = string(v, path, "id", true);
    if (const auto* rank = member(v, path, "rank", "an integer", false)) {
      if (!rank->is_number_integer() || rank->get<std::int64_t>() < 0 ||
          rank->get<std::int64_t>() > 1'000'000)
        mistyped(member_path(path, "rank"), "a rank number from 0", *rank);
      c.rank = rank->get<int>();
    }
    c.params = block(v, path, "params", json::object());
    c.status = *case_status_from(
        one_of(v, path, "status", {"ok", "error", "interrupted", "skipped"}, "ok"));
    c.message = string(v, path, "message", false);
    const auto stop =
        one_of(v, path, "stop_reason",
               {"converged", "max_samples", "timeout", "interrupted", "single"}, "converged");
    for (auto r : {stop_reason::converged, stop_reason::max_samples, stop_reason::timeout,
                   stop_reason::interrupted, stop_reason::single})
      if (to_string(r) == stop) c.stopped = r;
    if (const auto* e = member(v, path, "elapsed_s", "a number", false))
      c.elapsed_s = number(*e, member_path(path, "elapsed_s"));
    if (const auto* w = member(v, path, "warnings", "an array", false)) {
      const auto wp = member_path(path, "warnings");
      array(*w, wp);
      for (std::size_t i = 0; i < w->size(); ++i) {
        if (!(*w)[i].is_string()) mistyped(index_path(wp, i), "a string", (*w)[i]);
        c.warnings.push_back((*w)[i].get<std::string>());
      }
    }
    c.extra = block(v, path, "info", json::object());
    if (const auto* ms = member(v, path, "metrics", "an object", false)) {
      const auto mp = member_path(path, "metrics");
      object(*ms, mp);
      for (const auto& [name, m] : ms->items())
        c.metrics.push_back(metric(m, member_path(mp, name), name));
    }
    return c;
  }

  scenario_result scenario(const ojson& v, const std::string& path) const {
    object(v, path);
    scenario_result s;
    s.name = string(v, path, "name", true);
    s.description = string(v, path, "description", false);
    s.kind = string(v, path, "kind", true);
    s.source = string(v, path, "source", false);
    s.gate = block(v, path, "gate", json::object());
    s.verdict = string(v, path, "verdict", false);
    const auto* cases = member(v, path, "cases", "an array", true);
    const auto cp = member_path(path, "cases");
    array(*cases, cp);
    for (std::size_t i = 0; i < cases->size(); ++i)
      s.cases.push_back(case_result((*cases)[i], index_path(cp, i)));
    return s;
  }

  run_result run(const ojson& j) const {
    if (!j.is_object()) mistyped({}, "a pinbench.result/1 object", j);
    const auto* schema = member(j, {}, "schema", "\"pinbench.result/1\"", false);
    if (schema == nullptr) fail("schema", "expected \"pinbench.result/1\", got nothing");
    if (!schema->is_string() || schema->get<std::string>() != schema_name)
      mistyped("schema", "\"pinbench.result/1\"", *schema);

    run_result r;
    if (const auto* tool = member(j, {}, "tool", "an object", false)) {
      object(*tool, "tool");
      r.tool_version = string(*tool, "tool", "version", false);
      r.tool_git = string(*tool, "tool", "git", false);
    }
    r.created = string(j, {}, "created", false);
    r.command_line = string(j, {}, "command_line", false);
    if (const auto* seed = member(j, {}, "seed", "an integer", false)) {
      if (!seed->is_number_unsigned()) mistyped("seed", "a non-negative integer", *seed);
      r.seed = seed->get<std::uint64_t>();
    }
    if (const auto* repeat = member(j, {}, "repeat", "an integer", false)) {
      if (!repeat->is_number_unsigned() || repeat->get<std::uint64_t>() < 1 ||
          repeat->get<std::uint64_t>() > 1'000'000)
        mistyped("repeat", "a round count from 1", *repeat);
      r.repeat = repeat->get<std::uint32_t>();
    }
    r.overrides = block(j, {}, "overrides", json::object());
    if (const auto* in = member(j, {}, "interrupted", "a boolean", false)) {
      if (!in->is_boolean()) mistyped("interrupted", "true or false", *in);
      r.interrupted = in->get<bool>();
    }
    r.interrupted_by = string(j, {}, "interrupted_by", false);
    if (const auto* lost = member(j, {}, "lost_rank", "an object", false)) {
      object(*lost, "lost_rank");
      r.lost_rank = json(*lost);
    }
    r.environment = block(j, {}, "environment", json::object());
    if (j.contains("process") && j["process"].is_object())
      r.process = block(j, {}, "process", json());
    if (const auto* tune = member(j, {}, "tune", "an object", false))
      r.tune = tune_from_json(*tune, source_);
    if (const auto* ranks = member(j, {}, "ranks", "an array", false)) {
      array(*ranks, "ranks");
      r.ranks = json(*ranks);
    }
    if (const auto* env = member(j, {}, "environment", "an object", false))
      r.backend = string(*env, "environment", "backend", false);

    const auto* scenarios = member(j, {}, "scenarios", "an array", true);
    array(*scenarios, "scenarios");
    for (std::size_t i = 0; i < scenarios->size(); ++i)
      r.scenarios.push_back(scenario((*scenarios)[i], index_path("scenarios", i)));
    return r;
  }

 private:
  const std::string& source_;
};

}  // namespace

nlohmann::ordered_json to_json(const run_result& r) {
  ojson out = ojson::object();
  out["schema"] = schema_name;
  out["tool"] = {{"name", "pinbench"}, {"version", r.tool_version}, {"git", r.tool_git}};
  out["created"] = r.created;
  out["command_line"] = r.command_line;
  out["seed"] = r.seed;
  if (r.repeat > 1) out["repeat"] = r.repeat;
  out["overrides"] = r.overrides.is_null() ? ojson::object() : clean(r.overrides);
  out["interrupted"] = r.interrupted;
  if (!r.interrupted_by.empty()) out["interrupted_by"] = r.interrupted_by;
  if (r.lost_rank.is_object()) out["lost_rank"] = clean(r.lost_rank);
  ojson env = r.environment.is_object() ? clean(r.environment) : ojson::object();
  if (!env.contains("backend") && !r.backend.empty()) env["backend"] = r.backend;
  out["environment"] = std::move(env);
  if (r.process.is_object()) out["process"] = clean(r.process);
  if (r.ranks.is_array()) out["ranks"] = clean(r.ranks);
  if (r.tune) out["tune"] = to_json(*r.tune);
  ojson scenarios = ojson::array();
  for (const auto& s : r.scenarios) scenarios.push_back(scenario_json(s));
  out["scenarios"] = std::move(scenarios);
  return out;
}

run_result from_json(const nlohmann::ordered_json& j, const std::string& source) {
  return reader(source).run(j);
}

run_result from_json(const nlohmann::json& j, const std::string& source) {
  return reader(source).run(ojson(j));
}

}  // namespace pinbench::result
