#include "report/layout.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

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

// Cells of these units carry their own (scaled) unit, so the header needs none.
std::string header_unit(std::string_view unit) {
  if (unit == "ns" || unit == "bytes" || unit == "count" || unit.empty()) return {};
  if (unit == "fraction") return "%";
  return std::string(unit);
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

std::string plain_number(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:#.3g}", v);
}

std::string one_line(std::string_view s) {
  std::string out(s);
  std::replace_if(
      out.begin(), out.end(), [](char ch) { return ch == '\n' || ch == '\r' || ch == '\t'; }, ' ');
  return out;
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

std::string format_value(double v, std::string_view unit) {
  if (!std::isfinite(v)) return "-";
  if (unit == "ns") return format_duration_ns(v);
  if (unit == "bytes") {
    if (v < 0) return fmt::format("{:.0f} B", v);
    return format_bytes(static_cast<std::uint64_t>(std::llround(v)));
  }
  if (unit == "fraction") return fmt::format("{:.1f}", v * 100);
  if (unit == "count" && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return plain_number(v);
}

std::string metric_cell(const result::metric* m) {
  if (m == nullptr) return "-";
  const auto s = finite_summary(*m);
  if (s.n == 0) return "-";
  auto out = format_value(s.median, m->unit);
  // Identical samples (a counter) have no noise worth a column of "±0.0%".
  // Fractions are shown in percent already: their spread is in percentage points, since a
  // relative spread around a median near 0 (no overlap) would read as noise of 1000%.
  if (s.n >= 2 && s.stdev != 0)
    out += m->unit == "fraction" ? fmt::format(" \u00b1{:.1f}", s.stdev * 100)
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

std::string backend_name(const result::run_result& r) {
  if (!r.backend.empty()) return r.backend;
  return text_at(r.environment, {"backend"});
}

std::string header_line(const result::run_result& r) {
  std::vector<std::string> parts;
  parts.push_back("pinbench " + (r.tool_version.empty() ? std::string(version) : r.tool_version));
  const auto& env = r.environment;
  const auto backend = backend_name(r);
  const auto device = text_at(env, {"device", "name"});
  if (result::emulated_backend(backend)) {
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
  const auto backend = backend_name(r);
  if (!backend.empty()) out += "; backend: " + backend;
  if (result::emulated_backend(backend)) out += " \u2014 host-emulated figures, not GPU figures";
  return out;
}

}  // namespace pinbench::report::detail
