// Charts from results: what every kind's figures are built from (the sweep chart over a
// scenario's matrix, units on axes) on top of the SVG layer.
#include "chart/figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "chart/svg.hpp"
#include "core/units.hpp"

namespace pinbench::chart {

namespace {

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

// The params whose values differ among `cases` (the matrix axes), in the order the case ids
// name them.
std::vector<std::string> varying_params(const std::vector<const result::case_result*>& cases,
                                        std::vector<std::map<std::string, std::string>>& flat) {
  flat.clear();
  std::set<std::string> keys;
  for (const auto* c : cases) {
    flat.push_back(result::flat_params(c->params));
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

std::string series_name(const std::map<std::string, std::string>& flat,
                        const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) {
    const auto it = flat.find(k);
    out += (out.empty() ? "" : ", ") + k + "=" + (it == flat.end() ? "" : it->second);
  }
  return out;
}

svg::point summary_point(const result::metric& m, double divisor) {
  const auto s = result::finite_summary(m);
  svg::point p;
  p.y = s.median / divisor;
  if (s.n >= 2 && s.q3 > s.q1) {
    p.low = s.q1 / divisor;
    p.high = s.q3 / divisor;
  }
  return p;
}

std::string better_text(const result::metric& m) {
  return m.better == result::direction::higher  ? " Higher is better."
         : m.better == result::direction::lower ? " Lower is better."
                                                : "";
}

}  // namespace

// The cases a chart of `metric` can use: completed, with at least one finite sample.
std::vector<const result::case_result*> chartable(const result::scenario_result& s,
                                                  std::string_view metric) {
  std::vector<const result::case_result*> out;
  for (const auto& c : s.cases) {
    if (c.status != result::case_status::ok) continue;
    if (const auto* m = c.find(metric); m != nullptr && result::finite_summary(*m).n > 0)
      out.push_back(&c);
  }
  return out;
}

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
std::optional<figure> distribution_chart(const result::scenario_result& s,
                                         const result::case_result& c, const std::string& chart_id,
                                         const std::string& metric) {
  const auto* m = c.find(metric);
  if (m == nullptr) return std::nullopt;
  const auto sum = result::finite_summary(*m);
  if (sum.n == 0) return std::nullopt;
  const auto u = unit_for(m->unit, std::max(std::fabs(sum.max), std::fabs(sum.min)));
  svg::strip_chart chart;
  chart.id = chart_id;
  chart.value.label = axis_label(metric, u);
  chart.value.unit = u.name;
  chart.value.from_zero = false;
  if (m->unit == "fraction") chart.value.max = 100;
  const std::string label = c.id.empty() ? "default" : c.id;
  svg::strip_chart::group g{label, {}};
  for (double v : m->samples)
    if (std::isfinite(v)) g.samples.push_back(v / u.divisor);
  chart.groups.push_back(std::move(g));
  const std::string unit = u.name.empty() ? m->unit : u.name;
  figure fig;
  fig.title = fmt::format("{}: distribution of {} sample(s)", metric, sum.n);
  chart.title = fig.title + " \u2014 " + s.name;
  chart.description = fmt::format(
      "Strip plot: every sample of {} ({}) of the one case {}, over a box from the first to the "
      "third quartile; median {} {}.{}",
      metric, unit, label, svg::short_number(sum.median / u.divisor), unit, better_text(*m));
  fig.caption = fmt::format(
      " One case, so nothing to compare it with: each dot is a sample, the bar the median, the "
      "box spans the first to third quartile.{}",
      better_text(*m));
  fig.svg = svg::render(chart);
  return fig;
}

// One metric over the scenario's swept params: a line chart over the first numeric param
// (`prefer` first when it varies), one line per combination of the others; with no numeric
// param, one bar per case. With one case, the distribution of its samples.
std::optional<figure> sweep_chart(const result::scenario_result& s, const std::string& chart_id,
                                  const std::string& metric, const std::string& prefer) {
  const auto cases = chartable(s, metric);
  if (cases.empty()) return std::nullopt;
  if (cases.size() == 1) return distribution_chart(s, *cases.front(), chart_id, metric);
  std::vector<std::map<std::string, std::string>> flat;
  auto keys = varying_params(cases, flat);
  if (const auto it = std::find(keys.begin(), keys.end(), prefer); it != keys.end())
    std::rotate(keys.begin(), it, it + 1);

  const result::metric& first = *cases.front()->find(metric);
  double biggest = 0, smallest = INFINITY;
  for (const auto* c : cases) {
    const auto sum = result::finite_summary(*c->find(metric));
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
    return result::finite_summary(*c->find(metric)).min > 0;
  });
  if ((first.unit == "ns" || first.unit == "bytes") && all_positive && biggest / smallest >= 100) {
    y.log = true;
    y.log_base = 10;
    y.label += ", log scale";
  }
  const std::string better = better_text(first);

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

std::vector<figure> sweep_charts(const result::scenario_result& s, const std::string& id_prefix,
                                 const std::vector<sweep>& sweeps) {
  std::vector<figure> out;
  for (const auto& w : sweeps)
    if (auto f = sweep_chart(s, id_prefix + w.id, w.metric, w.prefer)) out.push_back(std::move(*f));
  return out;
}

std::optional<figure> tune_chart(const result::tune_block& t, const std::string& chart_id,
                                 std::size_t max_bars) {
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < t.trials.size(); ++i) {
    if (!t.trials[i].value) continue;
    const bool kept = t.chosen == i || t.baseline == i;
    if (shown.size() < max_bars || kept) shown.push_back(i);
  }
  if (shown.empty()) return std::nullopt;
  double biggest = 0;
  for (const std::size_t i : shown) biggest = std::max(biggest, *t.trials[i].value);
  if (t.chart_target) biggest = std::max(biggest, *t.chart_target);
  const display_unit u = unit_for(t.chart_unit, biggest);
  svg::bar_chart chart;
  chart.id = chart_id;
  chart.value.label = axis_label(t.chart_metric, u);
  chart.value.log = false;
  if (t.chart_target && t.chart_unit == "fraction") chart.value.max = 100;
  chart.category_label = "setting";
  svg::series meets{"meets the goal", {}}, misses{"misses it", {}};
  const double none = std::numeric_limits<double>::quiet_NaN();
  for (const std::size_t i : shown) {
    const auto& trial = t.trials[i];
    std::string label = trial.label.empty() ? "(defaults)" : trial.label;
    if (t.chosen == i) label = "-> " + label;
    if (t.baseline == i) label += " (in use)";
    label += " [" + std::string(to_string(trial.phase)) + "]";
    chart.categories.push_back(label);
    const double v = *trial.value / u.divisor;
    meets.points.push_back({0, trial.meets_goal ? v : none});
    misses.points.push_back({0, trial.meets_goal ? none : v});
  }
  chart.bars.push_back(std::move(meets));
  chart.bars.push_back(std::move(misses));
  figure fig;
  fig.title =
      fmt::format("{} of each setting tried ({} question)", t.chart_metric, to_string(t.question));
  chart.title = fig.title;
  const std::string target =
      !t.chart_target ? std::string()
      : t.chart_unit == "bytes"
          ? " The device holds " + bytes_text(*t.chart_target) + "."
          : fmt::format(" The target is {}.", svg::short_number(*t.chart_target / u.divisor) +
                                                  (u.name.empty() ? "" : " " + u.name));
  chart.description =
      fmt::format("Bar chart: {} of {} settings, ranked as the tuner ranked them.{}",
                  t.chart_metric, shown.size(), target);
  fig.caption = fmt::format(
      " Ranked as the tuner ranked them; \"->\" marks the answer, \"(in use)\" the setting "
      "measured as today's; [search] trials are short, [confirm] runs full length.{}{}",
      target,
      shown.size() < t.trials.size()
          ? fmt::format(" {} of {} trials shown; the result holds them all.", shown.size(),
                        t.trials.size())
          : std::string());
  fig.svg = svg::render(chart);
  return fig;
}

}  // namespace pinbench::chart
