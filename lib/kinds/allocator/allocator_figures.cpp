// Kind `allocator`'s charts: out-of-memory errors per case, peak allocated vs reserved bytes
// per case, and for each case the timeline of allocated and reserved bytes and the map of segments
// at peak (from the facts the engine keeps in case_result::extra: "timeline", "segments_at_peak").
#include "kinds/allocator/allocator_figures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "chart/svg.hpp"
#include "core/json_path.hpp"

namespace pinbench::kinds::allocator {

namespace {

using chart::axis_label;
using chart::bytes_text;
using chart::chartable;
using chart::figure;
using chart::unit_for;
using json = nlohmann::json;
namespace svg = chart::svg;

// Peak allocated vs peak reserved bytes per case: the gap is what fragmentation costs.
std::optional<figure> peaks(const result::scenario_result& s, const std::string& id) {
  const auto cases = chartable(s, "reserved_bytes.all.peak");
  if (cases.empty()) return std::nullopt;
  double biggest = 0;
  for (const auto* c : cases)
    biggest = std::max(biggest, result::finite_summary(*c->find("reserved_bytes.all.peak")).max);
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
    pa.y = a != nullptr ? result::finite_summary(*a).median / u.divisor : NAN;
    allocated.points.push_back(pa);
    svg::point pr;
    pr.y = result::finite_summary(*c->find("reserved_bytes.all.peak")).median / u.divisor;
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

std::string case_label(const result::case_result& c) {
  return c.id.empty() ? "default" : c.id;
}

// The cases with (and without) out-of-memory errors, as the caption lists them.
std::string oom_summary(const std::vector<std::string>& clean, std::size_t cases) {
  if (clean.empty()) return " Every case ran out of memory at least once.";
  if (clean.size() == cases) return " No case ran out of memory.";
  return fmt::format(" Without an out-of-memory error: {}.", fmt::join(clean, "; "));
}

// Out-of-memory errors per case (num_ooms, deterministic for a seed): which config avoids them.
std::optional<figure> ooms(const result::scenario_result& s, const std::string& id) {
  const auto cases = chartable(s, "num_ooms");
  if (cases.empty()) return std::nullopt;
  svg::bar_chart chart;
  chart.id = id;
  chart.value.label = "num_ooms (count)";
  chart.value.unit = "count";
  chart.value.format = [](double v) { return fmt::format("{:.0f}", v); };
  chart.category_label = "case";
  svg::series bars{"out-of-memory errors", {}};
  std::vector<std::string> clean;
  double biggest = 0;
  for (const auto* c : cases) {
    chart.categories.push_back(case_label(*c));
    svg::point p;
    p.y = result::finite_summary(*c->find("num_ooms")).median;
    biggest = std::max(biggest, p.y);
    if (p.y == 0) clean.push_back(case_label(*c));
    bars.points.push_back(p);
  }
  chart.value.max = std::max(biggest, 5.0);  // whole-number ticks when the counts are small
  chart.bars.push_back(std::move(bars));
  figure fig;
  fig.title = "Out-of-memory errors per case";
  chart.title = fig.title + " \u2014 " + s.name;
  chart.description = fmt::format(
      "Bar chart, one bar per case: the number of allocations that ran out of device memory "
      "(num_ooms, count) in one run of the workload, for {} cases.{}",
      cases.size(), oom_summary(clean, cases.size()));
  fig.caption = fmt::format(
      " num_ooms: allocations that failed for lack of device memory (each skipped, the run went "
      "on); 0 means the config avoided the out-of-memory error.{}",
      oom_summary(clean, cases.size()));
  fig.svg = svg::render(chart);
  return fig;
}

double number_or_nan(const json& j) {
  return j.is_number() ? j.get<double>() : NAN;
}

// Allocated and reserved bytes over the workload (info.timeline of an allocator case).
std::optional<figure> timeline(const result::case_result& c, const std::string& id,
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
std::optional<figure> segments(const result::case_result& c, const std::string& id,
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

}  // namespace

std::vector<chart::figure> figures(const result::scenario_result& s, const std::string& id_prefix) {
  std::vector<figure> out;
  const auto add = [&](std::optional<figure> f) {
    if (f) out.push_back(std::move(*f));
  };
  add(ooms(s, id_prefix + "ooms"));
  add(peaks(s, id_prefix + "peaks"));
  // A lone case has nothing to be compared with: its latency samples show how they spread.
  if (const auto timed = chartable(s, "alloc_latency"); timed.size() == 1)
    add(chart::distribution_chart(s, *timed.front(), id_prefix + "alloc-latency", "alloc_latency"));
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    const auto& c = s.cases[i];
    if (c.status != result::case_status::ok) continue;
    add(timeline(c, fmt::format("{}c{}-timeline", id_prefix, i), s.name));
    add(segments(c, fmt::format("{}c{}-segments", id_prefix, i), s.name));
  }
  return out;
}

}  // namespace pinbench::kinds::allocator
