#include "report/layout.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_path.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "core/version.hpp"
#include "kinds/registry.hpp"

namespace pinbench::report::detail {

namespace {

bool any_case_has(const result::scenario_result& s, std::string_view name) {
  return std::any_of(s.cases.begin(), s.cases.end(),
                     [&](const result::case_result& c) { return c.find(name) != nullptr; });
}

std::vector<std::string> every_metric(const result::scenario_result& s) {
  std::vector<std::string> out;
  for (const auto& c : s.cases)
    for (const auto& m : c.metrics)
      if (std::find(out.begin(), out.end(), m.name) == out.end()) out.push_back(m.name);
  return out;
}

std::string metric_header(const result::scenario_result& s, const std::string& name) {
  if (const auto* kind = kinds::find(s.kind))
    for (const auto& h : kind->headlines)
      if (h.metric == name && !h.label.empty()) return h.label;
  for (const auto& c : s.cases)
    if (const auto* m = c.find(name)) {
      const auto unit = header_unit(m->unit);
      return unit.empty() ? name : name + " " + unit;
    }
  return name;
}

// A string or number from the environment as text; empty when absent.
std::string text_at(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  const auto* v = find_path(j, keys);
  if (v == nullptr || v->is_null()) return {};
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number() || v->is_boolean()) return v->dump();
  return {};
}

std::string count_phrase(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

std::vector<std::string> shown_metrics(const result::scenario_result& s) {
  std::vector<std::string> out;
  if (const auto* kind = kinds::find(s.kind))
    for (const auto& h : kind->headlines)
      if (h.always || any_case_has(s, h.metric)) out.push_back(h.metric);
  // A kind without headlines (or a result of a kind this build lacks) still gets a useful table.
  if (out.empty()) out = every_metric(s);
  return out;
}

std::string metric_cell(const result::metric* m) {
  if (m == nullptr) return "-";
  const auto s = finite_summary(*m);
  if (s.n == 0) return "-";
  auto out = format_value(s.median, m->unit, unit_place::in_header);
  // Identical samples (a counter) have no noise worth a column of "±0.0%".
  // Fractions are shown in percent already: their spread is in percentage points, since a
  // relative spread around a median near 0 (no overlap) would read as noise of 1000%.
  if (s.n >= 2 && s.stdev != 0)
    out += unit_of(m->unit) == unit::fraction ? fmt::format(" \u00b1{:.1f}", s.stdev * 100)
                                              : fmt::format(" \u00b1{:.1f}%", s.rel_stdev() * 100);
  return out;
}

grid scenario_grid(const result::scenario_result& s, std::size_t message_limit) {
  const auto names = shown_metrics(s);
  grid g;
  g.columns.push_back({"case", align::left});
  for (const auto& name : names) g.columns.push_back({metric_header(s, name), align::right});
  g.columns.push_back({"n", align::right});
  g.columns.push_back({"stop", align::left});
  g.columns.push_back({"status", align::left});

  for (const auto& c : s.cases) {
    std::vector<std::string> row;
    row.push_back(c.id.empty() ? "default" : c.id);
    const result::metric* counted = nullptr;  // the metric whose sample count the row shows
    for (const auto& name : names) {
      const auto* m = c.find(name);
      if (counted == nullptr && m != nullptr && !m->samples.empty()) counted = m;
      row.push_back(metric_cell(m));
    }
    if (counted == nullptr)
      for (const auto& m : c.metrics)
        if (!m.samples.empty()) {
          counted = &m;
          break;
        }
    row.push_back(counted != nullptr ? std::to_string(counted->samples.size()) : "-");
    row.push_back(c.metrics.empty() ? "-" : std::string(result::to_string(c.stopped)));
    std::string status(result::to_string(c.status));
    if (!c.message.empty()) {
      const auto message = one_line(c.message);
      status += ": " + (message_limit == 0 ? message : truncate(message, message_limit));
    }
    row.push_back(std::move(status));
    g.rows.push_back(std::move(row));
    g.statuses.push_back(c.status);
  }
  return g;
}

std::string header_line(const result::run_result& r) {
  std::vector<std::string> parts;
  parts.push_back("pinbench " + (r.tool_version.empty() ? std::string(version) : r.tool_version));
  const auto& env = r.environment;
  const auto backend = r.backend_name();
  const auto device = text_at(env, {"device", "name"});
  if (r.emulated()) {
    // The device name only repeats the CPU model, which follows anyway.
    parts.push_back("backend: host (emulated device, not a GPU)");
  } else {
    parts.push_back("backend: " + (backend.empty() ? std::string("unknown") : backend));
    if (!device.empty()) parts.push_back(device);
    const auto gen = text_at(env, {"device", "pcie", "gen"});
    const auto width = text_at(env, {"device", "pcie", "width"});
    if (!gen.empty() && !width.empty()) parts.push_back("PCIe gen " + gen + " x" + width);
    const auto driver = text_at(env, {"device", "driver"});
    if (!driver.empty()) parts.push_back("driver " + driver);
  }
  const auto cpu = text_at(env, {"host", "cpu"});
  if (!cpu.empty()) parts.push_back(cpu);
  // What one clock read costs: the floor under any per-call figure in nanoseconds.
  if (const auto* read = find_path(env, {"timer", "read_ns"}); read != nullptr && read->is_number())
    parts.push_back(fmt::format("timer {:.1f} ns/read", read->get<double>()));
  if (!r.created.empty()) parts.push_back(r.created);

  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " \u00b7 ") + p;
  return out;
}

namespace {

// Each distinct text once, in the order first seen.
void add_once(std::vector<std::string>& to, std::string text) {
  if (std::find(to.begin(), to.end(), text) == to.end()) to.push_back(std::move(text));
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : "; ") + i;
  return out;
}

std::optional<std::string> link_line(const result::scenario_result& s) {
  std::vector<std::string> texts;
  for (const auto& c : s.cases) {
    const auto it = c.extra.find("link_ceiling");
    if (it == c.extra.end() || !it->is_object()) continue;
    const std::string source = it->value("source", "");
    if (source.rfind("host memcpy", 0) == 0)  // one per size: say what they are, once
      add_once(texts, "a host memcpy of each case's size, measured in the run");
    else if (!source.empty())
      add_once(texts, source);
    else
      add_once(texts, "none: " + it->value("reason", std::string("?")));
  }
  if (texts.empty()) return std::nullopt;
  return "link ceiling: " + joined(texts);
}

std::optional<std::string> telemetry_line(const result::scenario_result& s) {
  std::size_t watched = 0, throttled = 0;
  std::int64_t discarded = 0;
  std::vector<std::string> reasons;
  std::optional<std::int64_t> low, high, top;
  for (const auto& c : s.cases) {
    const auto it = c.extra.find("telemetry");
    if (it == c.extra.end() || !it->is_object() || !it->contains("before")) continue;
    ++watched;
    if (it->value("throttled", false)) ++throttled;
    discarded += it->value("discarded_samples", std::int64_t{0});
    for (const auto& r : it->value("reasons_seen", nlohmann::json::array()))
      if (r.is_string() && r != "gpu_idle") add_once(reasons, r.get<std::string>());
    for (const char* when : {"before", "after"}) {
      const auto& snap = (*it)[when];
      if (!snap.is_object()) continue;
      if (const auto v = snap.find("sm_clock_mhz"); v != snap.end() && v->is_number_integer()) {
        const auto mhz = v->get<std::int64_t>();
        low = low ? std::min(*low, mhz) : mhz;
        high = high ? std::max(*high, mhz) : mhz;
      }
      if (const auto v = snap.find("sm_clock_max_mhz"); v != snap.end() && v->is_number_integer())
        top = v->get<std::int64_t>();
    }
  }
  if (watched == 0) return std::nullopt;
  std::string out = fmt::format("GPU telemetry: {} of {} case(s) watched", watched, s.cases.size());
  if (low)
    out += fmt::format("; SM clock {}-{} MHz{} before and after them", *low, *high,
                       top ? fmt::format(" of {}", *top) : std::string());
  out += throttled == 0 ? std::string("; none throttled")
                        : fmt::format("; {} throttled ({})", throttled, joined(reasons));
  if (discarded > 0) out += fmt::format("; {} sample(s) discarded and taken again", discarded);
  return out;
}

std::optional<std::string> numa_line(const result::scenario_result& s) {
  std::size_t recorded = 0, placed = 0, none_asked = 0;
  std::vector<std::string> nodes, problems;
  for (const auto& c : s.cases) {
    const auto it = c.extra.find("numa");
    if (it == c.extra.end() || !it->is_object()) continue;
    ++recorded;
    if (it->value("requested", "") == "none") ++none_asked;
    if (it->value("placed", false)) ++placed;
    if (const auto n = it->find("node"); n != it->end() && n->is_number_integer())
      add_once(nodes, std::to_string(n->get<int>()));
    const std::string reason = it->value("reason", "");
    if (const auto at = reason.find("not placed: "); at != std::string::npos)
      add_once(problems, reason.substr(at + 12));
  }
  if (recorded == 0) return std::nullopt;
  if (none_asked == recorded) return "NUMA: no placement asked (--numa none)";
  std::string out = fmt::format("NUMA: {} of {} case(s) placed", placed, recorded);
  if (!nodes.empty()) out += " on node " + joined(nodes);
  if (!problems.empty()) out += "; not placed: " + joined(problems);
  return out;
}

// Why a column is "-" throughout: a collective of one rank has no busbw (case extra busbw_reason).
std::optional<std::string> absent_busbw_line(const result::scenario_result& s) {
  std::vector<std::string> reasons;
  for (const auto& c : s.cases)
    if (const auto it = c.extra.find("busbw_reason"); it != c.extra.end() && it->is_string())
      add_once(reasons, it->get<std::string>());
  if (reasons.empty()) return std::nullopt;
  return "no busbw: " + joined(reasons);
}

}  // namespace

std::vector<std::string> scenario_conditions(const result::scenario_result& s) {
  std::vector<std::string> out;
  for (auto line : {link_line(s), telemetry_line(s), numa_line(s), absent_busbw_line(s)})
    if (line) out.push_back(std::move(*line));
  return out;
}

std::vector<std::string> replay_checks(const result::scenario_result& s) {
  std::vector<std::string> out;
  for (const auto& c : s.cases) {
    const auto* d = find_path(c.extra, {"pytorch_decisions"});
    if (d == nullptr || !d->is_object()) continue;
    std::string text;
    if (d->value("checked", false)) {
      text = d->value("summary", std::string());
      // Which releases reproduce it says nothing when the device was too small to follow.
      const bool too_small = d->value("device_bytes", std::uint64_t{0}) <
                             d->value("pytorch_peak_reserved", std::uint64_t{0});
      if (const auto r = d->find("releases_reproducing");
          r != d->end() && r->is_array() && !d->value("reproduced", false) && !too_small) {
        std::string releases;
        for (const auto& x : *r)
          if (x.is_string()) releases += (releases.empty() ? "" : ", ") + x.get<std::string>();
        text += releases.empty() ? "; no release's rules reproduce it"
                                 : "; the rules of PyTorch " + releases + " reproduce it";
      }
    } else {
      text = "not checked against PyTorch's decisions: " + d->value("why_not", std::string("?"));
    }
    out.push_back((c.id.empty() ? std::string("default") : c.id) + ": " + text);
  }
  return out;
}

std::vector<std::string> environment_warnings(const result::run_result& r) {
  std::vector<std::string> out;
  const auto* w = find_path(r.environment, {"warnings"});
  if (w == nullptr || !w->is_array()) return out;
  for (const auto& item : *w)
    out.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  return out;
}

std::string footer_line(const result::run_result& r) {
  std::size_t cases = 0, failed = 0, interrupted = 0, skipped = 0;
  for (const auto& s : r.scenarios)
    for (const auto& c : s.cases) {
      ++cases;
      if (c.status == result::case_status::error) ++failed;
      if (c.status == result::case_status::interrupted) ++interrupted;
      if (c.status == result::case_status::skipped) ++skipped;
    }
  auto out = fmt::format("{}, {} failed, {} interrupted", count_phrase(cases, "case", "cases"),
                         failed, interrupted);
  if (skipped > 0) out += fmt::format(", {} skipped", skipped);
  if (!r.interrupted_by.empty()) out += "; stopped by " + r.interrupted_by;
  if (r.lost_rank.is_object()) {
    const auto lost = r.lost_rank.find("rank");
    out +=
        lost != r.lost_rank.end() && lost->is_number_integer()
            ? fmt::format("; rank {} lost: the cases completed before the loss", lost->get<int>())
            : std::string("; a rank lost: the cases completed before the loss");
  } else if (r.ranks.is_array() && !r.ranks.empty()) {
    out += fmt::format("; {} ranks", r.ranks.size());
  }
  const auto backend = r.backend_name();
  if (!backend.empty()) out += "; backend: " + backend;
  if (r.emulated()) out += " \u2014 host-emulated figures, not GPU figures";
  return out;
}

}  // namespace pinbench::report::detail

namespace pinbench::report {

std::vector<std::string> headline_metrics(const result::scenario_result& s) {
  return detail::shown_metrics(s);
}

}  // namespace pinbench::report
