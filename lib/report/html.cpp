// The HTML report: one self-contained page (no script, no network: a Content-Security-Policy
// says so to the browser) with the environment, and per scenario its charts, drawn here as
// inline SVG, and its table.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"
#include "report/svg.hpp"

namespace pinbench::report {

namespace {

using svg::escape;
using json = nlohmann::json;

constexpr std::string_view style_sheet = R"(
body { font-family: system-ui, sans-serif; color: #1b1b1b; background: #fff; margin: 0 auto;
       max-width: 1120px; padding: 0 20px 40px; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 24px 0 4px; }
h2 { font-size: 1.3rem; margin: 0 0 6px; }
h3 { font-size: 1.05rem; margin: 18px 0 6px; }
.lead { color: #444; margin: 0 0 12px; }
.warning { border-left: 4px solid #D55E00; background: #fff4ec; padding: 6px 10px; margin: 6px 0; }
.verdict { border-left: 4px solid #0072B2; background: #eef6fc; padding: 6px 10px; }
section { border-top: 1px solid #ccc; padding-top: 18px; margin-top: 26px; }
nav ul { columns: 2; padding-left: 20px; margin: 6px 0; }
table { border-collapse: collapse; font-size: 0.88rem; margin: 8px 0; }
.table-wrap { overflow-x: auto; }
tbody th { text-align: left; font-weight: normal; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; vertical-align: top; }
thead th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
.status-error { color: #a40000; font-weight: 600; }
.status-interrupted { color: #7a4d00; font-weight: 600; }
.status-skipped { color: #555; font-style: italic; }
.env th { text-align: left; font-weight: 500; background: #f6f6f6; }
figure { margin: 14px 0 22px; }
figcaption { font-size: 0.9rem; color: #333; margin-top: 2px; }
figcaption strong { display: block; font-size: 1rem; color: #111; }
svg.chart { max-width: 100%; height: auto; display: block; }
code { font-size: 0.9em; }
footer { margin-top: 30px; color: #444; font-size: 0.9rem; }
)";

// ---- params and values ------------------------------------------------------------------

// How a swept param's values read: plain numbers, sizes, durations, or words (categories).
enum class value_kind { number, bytes, duration, text };

std::optional<double> plain_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> value_of(const std::string& s, value_kind kind) {
  switch (kind) {
    case value_kind::number:
      return plain_number(s);
    case value_kind::bytes:
      if (const auto b = parse_bytes(s)) return static_cast<double>(*b);
      return std::nullopt;
    case value_kind::duration:
      if (const auto d = parse_duration_ns(s)) return static_cast<double>(*d);
      return std::nullopt;
    case value_kind::text:
      break;
  }
  return std::nullopt;
}

value_kind kind_of(const std::vector<std::string>& values) {
  for (auto k : {value_kind::number, value_kind::bytes, value_kind::duration})
    if (std::all_of(values.begin(), values.end(),
                    [&](const std::string& v) { return value_of(v, k).has_value(); }))
      return k;
  return value_kind::text;
}

// The cases a chart of `metric` can use: completed, with at least one finite sample.
std::vector<const bench::case_result*> chartable(const bench::scenario_result& s,
                                                 std::string_view metric) {
  std::vector<const bench::case_result*> out;
  for (const auto& c : s.cases) {
    if (c.status != "ok") continue;
    if (const auto* m = c.find(metric); m != nullptr && detail::finite_summary(*m).n > 0)
      out.push_back(&c);
  }
  return out;
}

// The params whose values differ among `cases` (the matrix axes), in the order the case ids
// name them.
std::vector<std::string> varying_params(const std::vector<const bench::case_result*>& cases,
                                        std::vector<std::map<std::string, std::string>>& flat) {
  flat.clear();
  std::set<std::string> keys;
  for (const auto* c : cases) {
    flat.push_back(detail::flat_params(c->params));
    for (const auto& kv : flat.back()) keys.insert(kv.first);
  }
  std::vector<std::string> out;
  for (const auto& k : keys) {
    std::set<std::string> values;
    for (const auto& f : flat) {
      const auto it = f.find(k);
      values.insert(it == f.end() ? std::string() : it->second);
    }
    if (values.size() > 1) out.push_back(k);
  }
  const std::string& id = cases.empty() ? std::string() : cases.front()->id;
  const auto position = [&](const std::string& k) {
    const auto at = id.find(k + "=");
    return at == std::string::npos ? id.size() + 1 : at;
  };
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return position(a) < position(b);
  });
  return out;
}

// ---- units on axes ----------------------------------------------------------------------

// A metric's values as an axis shows them: divided into a readable unit named in the label.
struct display_unit {
  double divisor = 1;
  std::string name;  // "" = no unit
};

display_unit unit_for(std::string_view unit, double biggest) {
  if (unit == "ns") {
    if (biggest >= 1e9) return {1e9, "s"};
    if (biggest >= 1e6) return {1e6, "ms"};
    if (biggest >= 1e3) return {1e3, "us"};
    return {1, "ns"};
  }
  if (unit == "bytes") {
    if (biggest >= 1024.0 * 1024 * 1024) return {1024.0 * 1024 * 1024, "GiB"};
    if (biggest >= 1024.0 * 1024) return {1024.0 * 1024, "MiB"};
    if (biggest >= 1024.0) return {1024.0, "KiB"};
    return {1, "bytes"};
  }
  if (unit == "fraction") return {0.01, "%"};
  return {1, std::string(unit)};
}

std::string axis_label(const std::string& name, const display_unit& u) {
  return u.name.empty() ? name : name + " (" + u.name + ")";
}

std::string bytes_text(double v) {
  return v >= 0 ? format_bytes(static_cast<std::uint64_t>(std::llround(v))) : "-";
}

// ---- charts -----------------------------------------------------------------------------

struct figure {
  std::string svg;
  std::string title, caption;
};

std::string figure_html(const figure& f) {
  return "<figure>\n" + f.svg + "<figcaption><strong>" + escape(f.title) + "</strong>" +
         escape(f.caption) + "</figcaption>\n</figure>\n";
}

std::string series_name(const std::map<std::string, std::string>& flat,
                        const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    const auto it = flat.find(k);
    out += (out.empty() ? "" : ", ") + k + "=" + (it == flat.end() ? "" : it->second);
  }
  return out;
}

svg::point summary_point(const bench::metric& m, double divisor) {
  const auto s = detail::finite_summary(m);
  svg::point p;
  p.y = s.median / divisor;
  if (s.n >= 2 && s.q3 > s.q1) {
    p.low = s.q1 / divisor;
    p.high = s.q3 / divisor;
  }
  return p;
}

// One metric over the scenario's swept params: a line chart over the first numeric param
// (`prefer` first when it varies), one line per combination of the others; with no numeric
// param, one bar per case. None with fewer than two cases to compare.
std::optional<figure> sweep_chart(const bench::scenario_result& s, const std::string& chart_id,
                                  const std::string& metric, const std::string& prefer) {
  const auto cases = chartable(s, metric);
  if (cases.size() < 2) return std::nullopt;
  std::vector<std::map<std::string, std::string>> flat;
  auto keys = varying_params(cases, flat);
  if (const auto it = std::find(keys.begin(), keys.end(), prefer); it != keys.end())
    std::rotate(keys.begin(), it, it + 1);

  const bench::metric& first = *cases.front()->find(metric);
  double biggest = 0, smallest = INFINITY;
  for (const auto* c : cases) {
    const auto sum = detail::finite_summary(*c->find(metric));
    biggest = std::max(biggest, std::fabs(sum.q3));
    biggest = std::max(biggest, std::fabs(sum.median));
    if (sum.median > 0) smallest = std::min(smallest, sum.median);
  }
  const auto yu = unit_for(first.unit, biggest);
  svg::axis y;
  y.label = axis_label(metric, yu);
  y.unit = yu.name;
  if (first.unit == "fraction") y.max = 100;
  // Times and sizes spread over orders of magnitude read on a log scale.
  const bool all_positive = std::all_of(cases.begin(), cases.end(), [&](const auto* c) {
    return detail::finite_summary(*c->find(metric)).min > 0;
  });
  if ((first.unit == "ns" || first.unit == "bytes") && all_positive && biggest / smallest >= 100) {
    y.log = true;
    y.log_base = 10;
    y.label += ", log scale";
  }
  const std::string better = first.better == "higher"  ? " Higher is better."
                             : first.better == "lower" ? " Lower is better."
                                                       : "";

  // The x param: the first varying param whose every value is a number, size or duration.
  std::string x_key;
  value_kind x_kind = value_kind::text;
  for (const auto& k : keys) {
    std::vector<std::string> values;
    for (const auto& f : flat) {
      const auto it = f.find(k);
      values.push_back(it == f.end() ? std::string() : it->second);
    }
    const auto kind = kind_of(values);
    if (kind != value_kind::text) {
      x_key = k;
      x_kind = kind;
      break;
    }
  }

  figure fig;
  if (!x_key.empty()) {
    std::vector<std::string> others;
    for (const auto& k : keys)
      if (k != x_key) others.push_back(k);
    double x_lo = INFINITY, x_hi = 0;
    std::vector<double> xs;
    for (const auto& f : flat) {
      const double x = *value_of(f.at(x_key), x_kind);
      xs.push_back(x);
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
    }
    svg::line_chart chart;
    chart.id = chart_id;
    chart.y = y;
    display_unit xu;
    if (x_kind == value_kind::bytes && x_lo > 0 && x_hi / x_lo >= 8) {
      chart.x.log = true;
      chart.x.log_base = 2;
      chart.x.format = bytes_text;
      chart.x.label = x_key + " (bytes, log scale)";
    } else {
      xu = unit_for(x_kind == value_kind::bytes      ? "bytes"
                    : x_kind == value_kind::duration ? "ns"
                                                     : "",
                    x_hi);
      chart.x.label = axis_label(x_key, xu);
      chart.x.unit = xu.name;
      chart.x.from_zero = false;
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto name = others.empty() ? metric : series_name(flat[i], others);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        names.push_back(name);
        chart.lines.push_back({name, {}});
        it = names.end() - 1;
      }
      auto p = summary_point(*cases[i]->find(metric), yu.divisor);
      p.x = xs[i] / xu.divisor;
      chart.lines[static_cast<std::size_t>(it - names.begin())].points.push_back(p);
    }
    for (auto& l : chart.lines)
      std::stable_sort(l.points.begin(), l.points.end(),
                       [](const svg::point& a, const svg::point& b) { return a.x < b.x; });
    fig.title = metric + " by " + x_key;
    chart.title = fig.title + " \u2014 " + s.name;
    chart.description = fmt::format(
        "Line chart: median {} ({}) against {}, {} line(s): {}. Whiskers span the quartiles.{}",
        metric, yu.name.empty() ? first.unit : yu.name, x_key, chart.lines.size(),
        fmt::join(names, "; "), better);
    fig.caption = fmt::format(
        " Median per case; whiskers span the first to third quartile "
        "of the samples. One line per {}.{}",
        others.empty() ? std::string("scenario") : fmt::format("{}", fmt::join(others, " and ")),
        better);
    fig.svg = svg::render(chart);
    return fig;
  }

  svg::bar_chart chart;
  chart.id = chart_id;
  chart.value = y;
  chart.value.log = false;  // a bar's length is its value: never on a log scale
  chart.value.label = axis_label(metric, yu);
  chart.category_label = "case";
  svg::series bars{metric + " (median)", {}};
  for (const auto* c : cases) {
    chart.categories.push_back(c->id.empty() ? "default" : c->id);
    bars.points.push_back(summary_point(*c->find(metric), yu.divisor));
  }
  chart.bars.push_back(std::move(bars));
  fig.title = metric + " by case";
  chart.title = fig.title + " \u2014 " + s.name;
  chart.description = fmt::format("Bar chart: median {} ({}) of {} cases.{}", metric,
                                  yu.name.empty() ? first.unit : yu.name, cases.size(), better);
  fig.caption =
      " Median per case; whiskers span the first to third quartile of the samples." + better;
  fig.svg = svg::render(chart);
  return fig;
}

// Peak allocated vs peak reserved bytes per case: the gap is what fragmentation costs.
std::optional<figure> allocator_peaks(const bench::scenario_result& s, const std::string& id) {
  const auto cases = chartable(s, "reserved_bytes.all.peak");
  if (cases.empty()) return std::nullopt;
  double biggest = 0;
  for (const auto* c : cases)
    biggest = std::max(biggest, detail::finite_summary(*c->find("reserved_bytes.all.peak")).max);
  const auto u = unit_for("bytes", biggest);
  svg::bar_chart chart;
  chart.id = id;
  chart.value.label = axis_label("peak bytes", u);
  chart.value.unit = u.name;
  chart.category_label = "case";
  svg::series allocated{"peak allocated", {}}, reserved{"peak reserved", {}};
  for (const auto* c : cases) {
    chart.categories.push_back(c->id.empty() ? "default" : c->id);
    const auto* a = c->find("allocated_bytes.all.peak");
    svg::point pa;
    pa.y = a != nullptr ? detail::finite_summary(*a).median / u.divisor : NAN;
    allocated.points.push_back(pa);
    svg::point pr;
    pr.y = detail::finite_summary(*c->find("reserved_bytes.all.peak")).median / u.divisor;
    reserved.points.push_back(pr);
  }
  chart.bars = {allocated, reserved};
  figure fig;
  fig.title = "Peak allocated vs peak reserved memory";
  chart.title = fig.title + " \u2014 " + s.name;
  chart.description = fmt::format(
      "Bar chart, two bars per case: the peak of allocated bytes (what the workload held) and "
      "of reserved bytes (what the allocator took from the device), in {}, for {} cases.",
      u.name, cases.size());
  fig.caption =
      " The gap between the two bars is memory reserved but not allocated "
      "(fragmentation and cache).";
  fig.svg = svg::render(chart);
  return fig;
}

const json* find_path(const json& j, std::initializer_list<const char*> keys) {
  const json* p = &j;
  for (const char* k : keys) {
    if (!p->is_object()) return nullptr;
    const auto it = p->find(k);
    if (it == p->end()) return nullptr;
    p = &*it;
  }
  return p;
}

double number_or_nan(const json& j) {
  return j.is_number() ? j.get<double>() : NAN;
}

// Allocated and reserved bytes over the workload (info.timeline of an allocator case).
std::optional<figure> allocator_timeline(const bench::case_result& c, const std::string& id,
                                         const std::string& scenario) {
  const json* t = find_path(c.extra, {"timeline", "points"});
  if (t == nullptr || !t->is_array() || t->empty()) return std::nullopt;
  double biggest = 0;
  for (const auto& p : *t)
    if (p.is_array() && p.size() >= 3) biggest = std::max(biggest, number_or_nan(p[2]));
  const auto u = unit_for("bytes", biggest);
  svg::line_chart chart;
  chart.id = id;
  chart.markers = false;
  chart.x.label = "allocator calls (count)";
  chart.x.unit = "calls";
  chart.y.label = axis_label("memory", u);
  chart.y.unit = u.name;
  svg::series allocated{"allocated", {}}, reserved{"reserved", {}};
  for (const auto& p : *t) {
    if (!p.is_array() || p.size() < 3) continue;
    const double x = number_or_nan(p[0]);
    allocated.points.push_back({x, number_or_nan(p[1]) / u.divisor});
    reserved.points.push_back({x, number_or_nan(p[2]) / u.divisor});
  }
  chart.lines = {allocated, reserved};
  if (const json* marks = find_path(c.extra, {"timeline", "iterations"});
      marks != nullptr && marks->is_array()) {
    for (const auto& m : *marks) chart.x_marks.push_back(number_or_nan(m));
    chart.marks_label = "iteration boundary";
  }
  const json* per_point = find_path(c.extra, {"timeline", "calls_per_point"});
  const double per = per_point != nullptr ? number_or_nan(*per_point) : 1;
  const std::string label = c.id.empty() ? "default" : c.id;
  figure fig;
  fig.title = "Allocated vs reserved memory over the workload: " + label;
  chart.title = fig.title + " \u2014 " + scenario;
  chart.description = fmt::format(
      "Line chart: allocated and reserved bytes ({}) after each allocator call of one run, {} "
      "points{}. Reserved memory at or above allocated memory; the gap is cached memory.",
      u.name, allocated.points.size(),
      per > 1 ? fmt::format(", each the highest value over {} calls", per) : std::string());
  fig.caption = per > 1 ? fmt::format(
                              " One untimed run; each point is the highest value over {} "
                              "consecutive calls, so no peak is lost.",
                              per)
                        : std::string(" One untimed run, one point per allocator call.");
  fig.svg = svg::render(chart);
  return fig;
}

// The segments at peak reserved memory (info.segments_at_peak of an allocator case).
std::optional<figure> allocator_segments(const bench::case_result& c, const std::string& id,
                                         const std::string& scenario) {
  const json* map = find_path(c.extra, {"segments_at_peak"});
  if (map == nullptr || !map->is_object()) return std::nullopt;
  const json* segs = find_path(*map, {"segments"});
  if (segs == nullptr || !segs->is_array() || segs->empty()) return std::nullopt;

  // Fixed state order, so that one state looks the same in every map of the page.
  const std::vector<std::string> state_keys{"active_allocated", "inactive", "active_pending_free"};
  const std::vector<std::string> state_names{"allocated (active)", "cached (inactive, free)",
                                             "pending free", "blocks not listed"};
  std::vector<bool> used(state_names.size(), false);
  const auto state_index = [&](const std::string& st) {
    const auto it = std::find(state_keys.begin(), state_keys.end(), st);
    return it == state_keys.end() ? state_names.size() - 1
                                  : static_cast<std::size_t>(it - state_keys.begin());
  };

  double biggest = 0;
  for (const auto& s : *segs) biggest = std::max(biggest, number_or_nan(s.value("size", json())));
  const auto u = unit_for("bytes", biggest);
  svg::segment_map m;
  m.id = id;
  m.scale.label = axis_label("bytes along a row", u);
  std::map<std::string, std::size_t> pools;  // segments per pool
  for (const auto& s : *segs) {
    if (!s.is_object()) continue;
    svg::segment_map::segment row;
    const double size = number_or_nan(s.value("size", json()));
    if (!std::isfinite(size)) continue;
    row.size = size / u.divisor;
    const std::string pool = s.value("pool", std::string());
    ++pools[pool.empty() ? std::string("unknown") : pool];
    double listed = 0;
    if (const auto b = s.find("blocks"); b != s.end() && b->is_array())
      for (const auto& blk : *b) {
        if (!blk.is_object()) continue;
        svg::segment_map::block block;
        block.offset = number_or_nan(blk.value("offset", json())) / u.divisor;
        const double bytes = number_or_nan(blk.value("size", json()));
        block.size = bytes / u.divisor;
        if (!std::isfinite(block.offset) || !std::isfinite(block.size)) continue;
        const std::string st = blk.value("state", std::string());
        block.state = state_index(st);
        used[block.state] = true;
        block.tooltip = fmt::format("{} at +{}: {}", st, bytes_text(block.offset * u.divisor),
                                    bytes_text(bytes));
        listed = std::max(listed, block.offset + block.size);
        row.blocks.push_back(std::move(block));
      }
    if (listed < row.size && s.value("blocks_cut", false)) {
      row.blocks.push_back({listed, row.size - listed, state_names.size() - 1,
                            "blocks not listed (the result keeps the first ones)"});
      used.back() = true;
    }
    row.tooltip =
        fmt::format("segment #{} at +{}: {}, allocated {}, {} pool, stream {}",
                    m.segments.size() + 1, bytes_text(number_or_nan(s.value("offset", json()))),
                    bytes_text(size), bytes_text(number_or_nan(s.value("allocated_bytes", json()))),
                    pool.empty() ? "?" : pool, s.value("stream", json(0)).dump());
    m.segments.push_back(std::move(row));
  }
  if (m.segments.empty()) return std::nullopt;
  for (std::size_t i = 0; i < state_names.size(); ++i)
    m.states.push_back(used[i] ? state_names[i] : std::string());

  const double total = number_or_nan(map->value("segments_total", json()));
  const double reserved = number_or_nan(map->value("reserved_bytes", json()));
  const double allocated = number_or_nan(map->value("allocated_bytes", json()));
  const std::string label = c.id.empty() ? "default" : c.id;
  figure fig;
  fig.title = "Segments at peak reserved memory: " + label;
  m.title = fig.title + " \u2014 " + scenario;
  std::string shown =
      std::isfinite(total) && total > static_cast<double>(m.segments.size())
          ? fmt::format("the first {} of {} segments by address", m.segments.size(), total)
          : fmt::format("{} segment(s) in address order", m.segments.size());
  std::string by_pool;
  for (const auto& [pool, n] : pools)
    by_pool += fmt::format("{}{} {}", by_pool.empty() ? "" : ", ", n, pool);
  shown += " (" + by_pool + ")";
  m.description = fmt::format(
      "Memory map: {}, packed left to right into rows, each segment outlined and split into its "
      "blocks by state (allocated solid, cached hatched, pending free dotted). Reserved {}, "
      "allocated {}.",
      shown, bytes_text(reserved), bytes_text(allocated));
  fig.caption = fmt::format(
      " {}; reserved {}, allocated {}. Segments in address order, packed into rows, each "
      "outlined. Solid: allocated blocks; hatched: cached free blocks, reusable only within their "
      "segment. Rows are labelled with the segment numbers they hold; hover a segment for its "
      "size and pool.",
      shown, bytes_text(reserved), bytes_text(allocated));
  fig.svg = svg::render(m);
  return fig;
}

std::vector<figure> scenario_figures(const bench::scenario_result& s, std::size_t index) {
  std::vector<figure> out;
  const auto id = [&](std::string_view what) { return fmt::format("s{}-{}", index, what); };
  const auto add = [&](std::optional<figure> f) {
    if (f) out.push_back(std::move(*f));
  };
  if (s.kind == "transfer") {
    add(sweep_chart(s, id("bandwidth"), "bandwidth", "bytes"));
    add(sweep_chart(s, id("host-call-time"), "host_call_time", "bytes"));
    add(sweep_chart(s, id("overlap"), "overlap", "bytes"));
  } else if (s.kind == "loader") {
    add(sweep_chart(s, id("samples-per-s"), "samples_per_s", {}));
    add(sweep_chart(s, id("gpu-busy"), "gpu_busy", {}));
  } else if (s.kind == "allocator") {
    add(allocator_peaks(s, id("peaks")));
    for (std::size_t i = 0; i < s.cases.size(); ++i) {
      const auto& c = s.cases[i];
      if (c.status != "ok") continue;
      add(allocator_timeline(c, id(fmt::format("c{}-timeline", i)), s.name));
      add(allocator_segments(c, id(fmt::format("c{}-segments", i)), s.name));
    }
  }
  return out;
}

// ---- page parts -------------------------------------------------------------------------

std::string env_value(const std::string& key, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  const bool sized = key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0;
  if (sized && v.is_number_integer() && v.get<double>() >= 0)
    return bytes_text(v.get<double>()) + " (" + v.dump() + ")";
  if (v.is_number_float()) return detail::exact_number(v.get<double>());
  return v.dump();
}

void env_rows(const json& j, const std::string& prefix, std::string& out) {
  for (const auto& [k, v] : j.items()) {
    // Warnings are shown as warnings, the backend in its own row; null says nothing.
    if (prefix.empty() && (k == "warnings" || k == "backend")) continue;
    if (v.is_null()) continue;
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object() && !v.empty()) {
      env_rows(v, name, out);
      continue;
    }
    out += "<tr><th scope=\"row\">" + escape(name) + "</th><td>" + escape(env_value(k, v)) +
           "</td></tr>\n";
  }
}

std::string environment_section(const bench::run_result& r) {
  std::string out =
      "<section id=\"environment\" aria-labelledby=\"environment-h\">\n"
      "<h2 id=\"environment-h\">Environment</h2>\n";
  for (const auto& w : detail::environment_warnings(r))
    out += "<p class=\"warning\" role=\"note\">warning: " + escape(w) + "</p>\n";
  out +=
      "<table class=\"env\">\n<caption>Where and how the figures were measured</caption>\n"
      "<tbody>\n";
  const auto row = [&](std::string_view k, const std::string& v) {
    if (!v.empty())
      out += "<tr><th scope=\"row\">" + escape(k) + "</th><td>" + escape(v) + "</td></tr>\n";
  };
  row("pinbench", r.tool_version + (r.tool_git.empty() ? "" : " (" + r.tool_git + ")"));
  row("created", r.created);
  row("backend", detail::backend_name(r));
  if (r.environment.is_object()) env_rows(r.environment, {}, out);
  row("seed", std::to_string(r.seed));
  if (r.overrides.is_object() && !r.overrides.empty()) {
    std::string sets;
    for (const auto& [k, v] : r.overrides.items())
      sets +=
          (sets.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    row("overrides (--set)", sets);
  }
  row("command line", r.command_line);
  out += "</tbody>\n</table>\n</section>\n";
  return out;
}

std::string status_class(const std::string& status) {
  if (status == "ok") return "status-ok";
  if (status == "error") return "status-error";
  if (status == "skipped") return "status-skipped";
  return "status-interrupted";
}

std::string scenario_table(const bench::scenario_result& s, const std::string& caption) {
  const auto g = detail::scenario_grid(s, 0);
  std::string out = "<div class=\"table-wrap\">\n<table class=\"cases\">\n<caption>" +
                    escape(caption) + "</caption>\n<thead><tr>";
  for (const auto& c : g.columns) out += "<th scope=\"col\">" + escape(c.header) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 0; r < g.rows.size(); ++r) {
    const auto& row = g.rows[r];
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i == 0) {
        out += "<th scope=\"row\"><code>" + escape(row[i]) + "</code></th>";
      } else if (i + 1 == row.size()) {
        out += "<td class=\"" + status_class(g.statuses[r]) + "\">" + escape(row[i]) + "</td>";
      } else {
        out += std::string(g.columns[i].alignment == detail::align::right ? "<td class=\"num\">"
                                                                          : "<td>") +
               escape(row[i]) + "</td>";
      }
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n</div>\n";
}

std::string scenario_section(const bench::scenario_result& s, std::size_t index) {
  const std::string id = fmt::format("scenario-{}", index);
  std::string out = fmt::format(
      "<section class=\"scenario\" id=\"{}\" aria-labelledby=\"{}-h\" data-kind=\"{}\">\n"
      "<h2 id=\"{}-h\">{}</h2>\n",
      id, id, escape(s.kind), id, escape(s.name));
  if (!s.description.empty()) out += "<p class=\"lead\">" + escape(s.description) + "</p>\n";
  out += "<p>kind: <code>" + escape(s.kind) + "</code>";
  if (!s.source.empty()) out += " \u00b7 source: <code>" + escape(s.source) + "</code>";
  out += fmt::format(" \u00b7 {} case(s)</p>\n", s.cases.size());
  if (!s.verdict.empty())
    out += "<p class=\"verdict\"><strong>Verdict:</strong> " + escape(s.verdict) + "</p>\n";

  const auto figures = scenario_figures(s, index);
  if (!figures.empty()) {
    out += "<h3>Charts</h3>\n";
    for (const auto& f : figures) out += figure_html(f);
  }
  out += "<h3>Cases</h3>\n";
  if (s.cases.empty())
    out += "<p>(no cases)</p>\n";
  else
    out += scenario_table(s, s.name +
                                 ": median of each headline metric (\u00b1 relative "
                                 "standard deviation), samples, stop reason and status");
  std::string warnings;
  for (const auto& c : s.cases)
    for (const auto& w : c.warnings)
      warnings += "<li><code>" + escape(c.id.empty() ? "default" : c.id) + "</code>: " + escape(w) +
                  "</li>\n";
  if (!warnings.empty())
    out += "<h3>Warnings</h3>\n<ul class=\"warnings\">\n" + warnings + "</ul>\n";
  return out + "</section>\n";
}

}  // namespace

std::string to_html(const bench::run_result& r) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // No script and nothing from the network: the browser is told so, and refuses any.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"pinbench " +
      escape(r.tool_version) + "\">\n<link rel=\"icon\" href=\"data:,\">\n<title>pinbench report";
  if (!r.created.empty()) out += " \u2014 " + escape(r.created);
  out += "</title>\n<style>" + std::string(style_sheet) + "</style>\n</head>\n<body>\n";
  out += "<header>\n<h1>pinbench results</h1>\n<p class=\"lead\">" +
         escape(detail::header_line(r)) + "</p>\n";
  if (detail::backend_name(r) == "host")
    out +=
        "<p class=\"warning\" role=\"note\">Host backend: the device is emulated in host "
        "memory. These are host figures (your RAM and CPUs), not GPU figures.</p>\n";
  if (r.interrupted)
    out +=
        "<p class=\"warning\" role=\"note\">The run was interrupted: the result holds the "
        "cases completed before it stopped.</p>\n";
  out += "</header>\n";
  if (!r.scenarios.empty()) {
    out += "<nav aria-label=\"Scenarios\">\n<ul>\n";
    for (std::size_t i = 0; i < r.scenarios.size(); ++i)
      out += fmt::format("<li><a href=\"#scenario-{}\">{}</a> ({})</li>\n", i,
                         escape(r.scenarios[i].name), escape(r.scenarios[i].kind));
    out += "</ul>\n</nav>\n";
  }
  out += "<main>\n" + environment_section(r);
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) out += scenario_section(r.scenarios[i], i);
  out += "</main>\n<footer>\n<p>" + escape(detail::footer_line(r)) + "</p>\n</footer>\n";
  return out + "</body>\n</html>\n";
}

}  // namespace pinbench::report
