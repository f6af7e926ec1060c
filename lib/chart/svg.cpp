#include "chart/svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/stats.hpp"
#include "core/text.hpp"

namespace pinbench::chart::svg {

namespace {

// Okabe-Ito colours (distinguishable with the common colour-vision deficiencies); yellow is
// left out, it does not show on white.
constexpr std::array<std::string_view, 7> colours{"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                  "#E69F00", "#56B4E9", "#000000"};
// Dash patterns, one per series, so that lines differ without colour.
constexpr std::array<std::string_view, 7> dashes{"",     "8 4",         "2 3", "10 3 2 3",
                                                 "16 4", "5 2 1 2 1 2", "1 5"};
constexpr std::size_t styles = colours.size();

constexpr double width = 760;
constexpr double char_px = 7;  // a generous width of one 12px character, for layout
constexpr double legend_row = 20;

std::string px(double v) {
  return fmt::format("{:.1f}", v);
}

std::string colour(std::size_t i) {
  return std::string(colours[i % styles]);
}

// Series beyond the palette repeat colours, but with another dash: no two look the same.
std::string dash(std::size_t i) {
  return std::string(dashes[(i + i / styles) % styles]);
}

// ---- scales -----------------------------------------------------------------------------

struct scale {
  double d0 = 0, d1 = 1;  // domain
  double r0 = 0, r1 = 1;  // range (pixels)
  bool log = false;
  [[nodiscard]] double operator()(double v) const {
    const double t =
        log ? (std::log(v) - std::log(d0)) / (std::log(d1) - std::log(d0)) : (v - d0) / (d1 - d0);
    return r0 + t * (r1 - r0);
  }
};

// 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (raw <= m * power * (1 + 1e-9)) return m * power;
  return 10 * power;
}

// Ticks covering [lo, hi]; the domain is set to the outermost ticks.
std::vector<double> make_ticks(const axis& a, double lo, double hi, scale& s) {
  std::vector<double> ticks;
  s.log = a.log;
  if (a.log) {
    const double base = a.log_base > 1 ? a.log_base : 10;
    double e0 = std::floor(std::log(lo) / std::log(base) + 1e-9);
    double e1 = std::ceil(std::log(hi) / std::log(base) - 1e-9);
    if (e1 <= e0) {
      e0 -= 1;
      e1 += 1;
    }
    // Every k-th power, so that at most 9 labels share the axis.
    double k = 1;
    for (double step : {1.0, 2.0, 3.0, 4.0, 5.0, 10.0}) {
      k = step;
      if ((e1 - e0) / step <= 8) break;
    }
    e0 = std::floor(e0 / k) * k;
    e1 = std::ceil(e1 / k) * k;
    for (double e = e0; e <= e1 + 1e-9; e += k) ticks.push_back(std::pow(base, e));
    s.d0 = ticks.front();
    s.d1 = ticks.back();
    return ticks;
  }
  if (a.from_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (std::isfinite(a.max)) hi = std::max(hi, a.max);
  if (hi - lo <= 0) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    hi += pad;
    if (!a.from_zero || lo != 0) lo -= pad;
  }
  const double step = nice_step((hi - lo) / 5);
  const double first = std::floor(lo / step + 1e-9) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  for (double t = first; t <= last + step * 1e-6; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  s.d0 = ticks.front();
  s.d1 = ticks.back();
  return ticks;
}

std::string tick_text(const axis& a, double v) {
  return a.format ? a.format(v) : short_number(v);
}

// A value with its unit, for tooltips.
std::string value_text(const axis& a, double v) {
  return a.unit.empty() ? tick_text(a, v) : tick_text(a, v) + " " + a.unit;
}

// ---- pieces -----------------------------------------------------------------------------

// The svg element, named by its title and description.
std::string open_svg(const std::string& id, const std::string& title,
                     const std::string& description, double height, std::string_view kind) {
  return fmt::format(
      "<svg class=\"chart {kind}\" id=\"{id}\" role=\"img\" aria-labelledby=\"{id}-title "
      "{id}-desc\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" "
      "font-family=\"system-ui, sans-serif\" font-size=\"12\">\n"
      "<title id=\"{id}-title\">{title}</title>\n<desc id=\"{id}-desc\">{desc}</desc>\n",
      fmt::arg("kind", kind), fmt::arg("id", escape(id)), fmt::arg("w", px(width)),
      fmt::arg("h", px(height)), fmt::arg("title", escape(title)),
      fmt::arg("desc", escape(description)));
}

// A marker of shape `i` centred on (x, y): circle, square, triangle, diamond, inverted
// triangle, cross, plus.
std::string marker(std::size_t i, double x, double y, const std::string& fill,
                   const std::string& tooltip, std::string_view cls = "mark marker") {
  constexpr double r = 4.5;
  std::string d;
  bool stroked = false;
  switch (i % styles) {
    case 0:
      d = fmt::format("M{} {}a{} {} 0 1 0 {} 0a{} {} 0 1 0 {} 0Z", px(x - r), px(y), r, r, 2 * r, r,
                      r, -2 * r);
      break;
    case 1:
      d = fmt::format("M{} {}h{}v{}h{}Z", px(x - r), px(y - r), 2 * r, 2 * r, -2 * r);
      break;
    case 2:
      d = fmt::format("M{} {}L{} {}L{} {}Z", px(x), px(y - r - 1), px(x + r + 1), px(y + r),
                      px(x - r - 1), px(y + r));
      break;
    case 3:
      d = fmt::format("M{} {}L{} {}L{} {}L{} {}Z", px(x), px(y - r - 1), px(x + r + 1), px(y),
                      px(x), px(y + r + 1), px(x - r - 1), px(y));
      break;
    case 4:
      d = fmt::format("M{} {}L{} {}L{} {}Z", px(x), px(y + r + 1), px(x + r + 1), px(y - r),
                      px(x - r - 1), px(y - r));
      break;
    case 5:
      d = fmt::format("M{} {}L{} {}M{} {}L{} {}", px(x - r), px(y - r), px(x + r), px(y + r),
                      px(x - r), px(y + r), px(x + r), px(y - r));
      stroked = true;
      break;
    default:
      d = fmt::format("M{} {}H{}M{} {}V{}", px(x - r - 1), px(y), px(x + r + 1), px(x),
                      px(y - r - 1), px(y + r + 1));
      stroked = true;
      break;
  }
  const std::string paint =
      stroked ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2.2\"", fill)
              : fmt::format("fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.8\"", fill);
  return fmt::format("<path class=\"{}\" d=\"{}\" {}><title>{}</title></path>\n", cls, d, paint,
                     escape(tooltip));
}

// Fill patterns for bars and blocks: solid, then hatches and dots, so that fills differ
// without colour. Pattern 0 is the plain colour.
std::string pattern_def(const std::string& id, std::size_t i, const std::string& col) {
  const std::string bg = "<rect width=\"6\" height=\"6\" fill=\"#fff\"/>";
  switch (i % styles) {
    case 0:
      return {};
    case 1:
      return fmt::format(
          "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\">{}<rect width=\"2.5\" height=\"6\" fill=\"{}\"/>"
          "</pattern>\n",
          id, bg, col);
    case 2:
      return fmt::format(
          "<pattern id=\"{}\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\">"
          "<rect width=\"5\" height=\"5\" fill=\"#fff\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1.4\" "
          "fill=\"{}\"/></pattern>\n",
          id, col);
    case 3:
      return fmt::format(
          "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\">{}<rect width=\"1.6\" height=\"6\" fill=\"{}\"/>"
          "<rect width=\"6\" height=\"1.6\" fill=\"{}\"/></pattern>\n",
          id, bg, col, col);
    case 4:
      return fmt::format(
          "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">{}"
          "<rect width=\"6\" height=\"2.2\" fill=\"{}\"/></pattern>\n",
          id, bg, col);
    case 5:
      return fmt::format(
          "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">{}"
          "<rect width=\"2.2\" height=\"6\" fill=\"{}\"/></pattern>\n",
          id, bg, col);
    default:
      return fmt::format(
          "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(-45)\">{}<rect width=\"2.5\" height=\"6\" fill=\"{}\"/>"
          "</pattern>\n",
          id, bg, col);
  }
}

std::string pattern_id(const std::string& chart, std::size_t i) {
  return fmt::format("{}-fill{}", chart, i);
}

std::string fill_ref(const std::string& chart, std::size_t i, const std::string& col) {
  return i % styles == 0 ? col : "url(#" + escape(pattern_id(chart, i)) + ")";
}

std::string defs(const std::string& chart, std::size_t n, const std::vector<std::string>& cols) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += pattern_def(escape(pattern_id(chart, i)), i, cols[i]);
  return out.empty() ? out : "<defs>\n" + out + "</defs>\n";
}

// A label cut to fit `max_chars`, its full text as a tooltip when cut.
std::string label_text(double x, double y, std::string_view anchor, const std::string& text,
                       std::size_t max_chars) {
  std::string shown = text;
  if (shown.size() > max_chars && max_chars > 1) shown = shown.substr(0, max_chars - 1) + "\u2026";
  return fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" dominant-baseline=\"middle\">"
      "{}<title>{}</title></text>\n",
      px(x), px(y), anchor, escape(shown), escape(text));
}

struct legend_entry {
  std::string name;
  enum class kind { line, swatch, guide, interval } how = kind::line;
  std::size_t style = 0;
  bool with_marker = true;
  std::string fill;  // swatches
};

// The legend below the plot, flowing into rows; returns its height.
double legend(std::string& out, const std::vector<legend_entry>& entries, double top) {
  if (entries.empty()) return 0;
  out += fmt::format("<g class=\"legend\" transform=\"translate(0,{})\">\n", px(top));
  double x = 16, y = 10;
  for (const auto& e : entries) {
    if (e.name.empty()) continue;  // a state or series not shown in this chart
    const double w = 34 + char_px * static_cast<double>(e.name.size()) + 18;
    if (x > 16 && x + w > width - 8) {
      x = 16;
      y += legend_row;
    }
    out += "<g class=\"legend-entry\">";
    switch (e.how) {
      case legend_entry::kind::line: {
        const auto d = dash(e.style);
        out += fmt::format(
            "<path d=\"M{} {}h28\" stroke=\"{}\" stroke-width=\"2\" fill=\"none\"{}/>", px(x),
            px(y), colour(e.style), d.empty() ? "" : " stroke-dasharray=\"" + d + "\"");
        if (e.with_marker)
          out += marker(e.style, x + 14, y, colour(e.style), e.name, "legend-marker");
        break;
      }
      case legend_entry::kind::swatch:
        out += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"28\" height=\"12\" fill=\"{}\" "
            "stroke=\"#333\" stroke-width=\"0.8\"/>",
            px(x), px(y - 6), e.fill);
        break;
      case legend_entry::kind::guide:
        out += fmt::format("<path d=\"M{} {}v14\" stroke=\"#777\" stroke-dasharray=\"2 2\"/>",
                           px(x + 14), px(y - 7));
        break;
      case legend_entry::kind::interval:
        out += fmt::format(
            "<path d=\"M{} {}h28M{} {}v10M{} {}v10\" stroke=\"#1b1b1b\" stroke-width=\"2\"/>",
            px(x), px(y), px(x), px(y - 5), px(x + 28), px(y - 5));
        out += marker(3, x + 14, y, "#1b1b1b", e.name, "legend-marker");
        break;
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text></g>\n",
                       px(x + 34), px(y), escape(e.name));
    x += w;
  }
  out += "</g>\n";
  return y + legend_row;
}

// Horizontal value axis along y = `bottom`, with vertical grid lines up to `top`.
void x_axis(std::string& out, const axis& a, const std::vector<double>& ticks, const scale& s,
            double top, double bottom) {
  out += "<g class=\"axis x-axis\">\n";
  for (double t : ticks) {
    const double x = s(t);
    out += fmt::format("<path d=\"M{} {}V{}\" stroke=\"#e3e3e3\"/>", px(x), px(top), px(bottom));
    out += fmt::format("<path d=\"M{} {}v5\" stroke=\"#333\"/>", px(x), px(bottom));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x),
                       px(bottom + 18), escape(tick_text(a, t)));
  }
  out += fmt::format("<path d=\"M{} {}H{}\" stroke=\"#333\"/>\n", px(s.r0), px(bottom), px(s.r1));
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"600\">{}"
      "</text>\n</g>\n",
      px((s.r0 + s.r1) / 2), px(bottom + 38), escape(a.label));
}

void y_axis(std::string& out, const axis& a, const std::vector<double>& ticks, const scale& s,
            double left, double right) {
  out += "<g class=\"axis y-axis\">\n";
  for (double t : ticks) {
    const double y = s(t);
    out += fmt::format("<path d=\"M{} {}H{}\" stroke=\"#e3e3e3\"/>", px(left), px(y), px(right));
    out += fmt::format("<path d=\"M{} {}h-5\" stroke=\"#333\"/>", px(left), px(y));
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
        px(left - 8), px(y), escape(tick_text(a, t)));
  }
  out += fmt::format("<path d=\"M{} {}V{}\" stroke=\"#333\"/>\n", px(left), px(s.r0), px(s.r1));
  out += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(16,{}) rotate(-90)\" "
      "text-anchor=\"middle\" font-weight=\"600\">{}</text>\n</g>\n",
      px((s.r0 + s.r1) / 2), escape(a.label));
}

bool usable(const axis& a, double v) {
  return std::isfinite(v) && (!a.log || v > 0);
}

// The left edge of rows labelled with `names`: room for the longest (at most 40 characters).
std::size_t row_label_chars(const std::vector<std::string>& names) {
  std::size_t longest = 4;
  for (const auto& n : names) longest = std::max(longest, n.size());
  return std::min<std::size_t>(longest, 40);
}

double row_left(std::size_t label_chars) {
  return 16 + char_px * static_cast<double>(label_chars) + 10;
}

// Where the i-th of n dots sits within a row's band, from 0 to 1: a low-discrepancy sequence,
// so that equal values spread out the same way on every page.
double spread(std::size_t i) {
  const double golden = 0.6180339887498949;
  return std::fmod(0.5 + golden * static_cast<double>(i), 1.0);
}

// One strip-chart row: the box (quartiles), the median and every sample as a dot.
std::string strip_row(const strip_chart::group& g, std::size_t i, const scale& xs, double y,
                      double band, const axis& a) {
  std::vector<double> sorted;
  for (double v : g.samples)
    if (usable(a, v)) sorted.push_back(v);
  std::sort(sorted.begin(), sorted.end());
  std::string out = fmt::format("<g class=\"series\" data-series=\"{}\">\n", escape(g.name));
  if (sorted.empty()) return out + "</g>\n";
  const auto col = colour(i);
  const double q1 = quantile_sorted(sorted, 0.25), med = quantile_sorted(sorted, 0.5),
               q3 = quantile_sorted(sorted, 0.75);
  out += fmt::format(
      "<rect class=\"box\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
      "fill-opacity=\"0.12\" stroke=\"{}\"><title>{}</title></rect>\n",
      px(xs(q1)), px(y), px(std::max(xs(q3) - xs(q1), 1.0)), px(band), col, col,
      escape(fmt::format("{}: first quartile {}, third quartile {}", g.name, value_text(a, q1),
                         value_text(a, q3))));
  out += fmt::format(
      "<path class=\"mark median\" d=\"M{} {}v{}\" stroke=\"{}\" stroke-width=\"3\">"
      "<title>{}</title></path>\n",
      px(xs(med)), px(y - 3), px(band + 6), col,
      escape(
          fmt::format("{}: median {} of {} samples", g.name, value_text(a, med), sorted.size())));
  std::size_t k = 0;
  for (double v : g.samples) {
    if (!usable(a, v)) continue;
    out += fmt::format(
        "<circle class=\"mark sample\" cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"{}\" "
        "fill-opacity=\"0.75\"><title>{}</title></circle>\n",
        px(xs(v)), px(y + 3 + spread(k++) * (band - 6)), col,
        escape(fmt::format("{}: {}", g.name, value_text(a, v))));
  }
  return out + "</g>\n";
}

}  // namespace

std::string short_number(double v) {
  if (v == 0 || !std::isfinite(v)) return v == 0 ? "0" : "-";
  const double a = std::fabs(v);
  // Big counts read better as 12.5k, 3M than as 1.25e+04.
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

std::string render(const line_chart& c) {
  // The data's extent (whiskers included).
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const auto& s : c.lines)
    for (const auto& p : s.points) {
      if (!usable(c.x, p.x) || !usable(c.y, p.y)) continue;
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      for (double v : {p.y, p.low, p.high})
        if (usable(c.y, v)) {
          y_lo = std::min(y_lo, v);
          y_hi = std::max(y_hi, v);
        }
    }
  if (!std::isfinite(x_lo)) {  // nothing to draw: an empty frame would mislead
    x_lo = x_hi = c.x.log ? 1 : 0;
    y_lo = y_hi = c.y.log ? 1 : 0;
  }

  const double left = 84, right = width - 24, top = 14, bottom = top + 250;
  scale xs{0, 1, left, right, false}, ys{0, 1, bottom, top, false};
  const auto x_ticks = make_ticks(c.x, x_lo, x_hi, xs);
  const auto y_ticks = make_ticks(c.y, y_lo, y_hi, ys);

  std::vector<legend_entry> entries;
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    entries.push_back({c.lines[i].name, legend_entry::kind::line, i, c.markers, {}});
  if (!c.x_marks.empty() && !c.marks_label.empty())
    entries.push_back({c.marks_label, legend_entry::kind::guide, 0, false, {}});

  std::string body;
  y_axis(body, c.y, y_ticks, ys, left, right);
  x_axis(body, c.x, x_ticks, xs, top, bottom);
  if (!c.x_marks.empty()) {
    body += "<g class=\"guides\">";
    for (double m : c.x_marks)
      if (usable(c.x, m) && m >= xs.d0 && m <= xs.d1)
        body += fmt::format("<path d=\"M{} {}V{}\" stroke=\"#777\" stroke-dasharray=\"2 2\"/>",
                            px(xs(m)), px(top), px(bottom));
    body += "</g>\n";
  }
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const auto& s = c.lines[i];
    const auto col = colour(i);
    body += fmt::format("<g class=\"series\" data-series=\"{}\">\n", escape(s.name));
    std::string d;
    std::size_t drawn = 0;
    for (const auto& p : s.points) {
      if (!usable(c.x, p.x) || !usable(c.y, p.y)) continue;
      d += fmt::format("{}{} {}", drawn == 0 ? "M" : "L", px(xs(p.x)), px(ys(p.y)));
      ++drawn;
    }
    if (drawn >= 2) {
      const auto ds = dash(i);
      body += fmt::format(
          "<path class=\"mark line\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
          "stroke-linejoin=\"round\"{}><title>{}</title></path>\n",
          d, col, ds.empty() ? "" : " stroke-dasharray=\"" + ds + "\"", escape(s.name));
    }
    for (const auto& p : s.points) {
      if (!usable(c.x, p.x) || !usable(c.y, p.y)) continue;
      const double x = xs(p.x);
      if (usable(c.y, p.low) && usable(c.y, p.high) && p.high > p.low)
        body += fmt::format(
            "<path class=\"whisker\" d=\"M{} {}V{}M{} {}h8M{} {}h8\" stroke=\"{}\" "
            "stroke-width=\"1.2\"/>\n",
            px(x), px(ys(p.low)), px(ys(p.high)), px(x - 4), px(ys(p.low)), px(x - 4),
            px(ys(p.high)), col);
      // A lone point is drawn as a marker even on a dense chart, or it would not show.
      if (c.markers || drawn < 2)
        body += marker(i, x, ys(p.y), col,
                       s.name + ": " + value_text(c.x, p.x) + ", " + value_text(c.y, p.y));
    }
    body += "</g>\n";
  }

  std::string leg;
  const double legend_h = legend(leg, entries, bottom + 52);
  const double height = bottom + 52 + legend_h + 6;
  return open_svg(c.id, c.title, c.description, height, "line-chart") + body + leg + "</svg>\n";
}

std::string render(const bar_chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : c.bars)
    for (const auto& p : s.points)
      for (double v : {p.y, p.low, p.high})
        if (std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
  if (!std::isfinite(lo)) lo = hi = 0;

  std::size_t longest = 0;
  for (const auto& cat : c.categories) longest = std::max(longest, cat.size());
  const std::size_t label_chars = std::min<std::size_t>(std::max<std::size_t>(longest, 4), 40);
  const double left = 16 + char_px * static_cast<double>(label_chars) + 10;
  const double right = width - 76;
  const double top = 10;
  const std::size_t n_series = std::max<std::size_t>(c.bars.size(), 1);
  const double bar_h = 14, bar_gap = 3, group_pad = 12;
  const double group_h = static_cast<double>(n_series) * (bar_h + bar_gap) + group_pad;
  const double bottom = top + group_h * static_cast<double>(c.categories.size());

  axis value = c.value;
  value.log = false;
  scale xs{0, 1, left, right, false};
  const auto ticks = make_ticks(value, lo, hi, xs);

  std::vector<std::string> cols;
  for (std::size_t i = 0; i < c.bars.size(); ++i) cols.push_back(colour(i));
  std::string body = defs(c.id, c.bars.size(), cols);
  x_axis(body, value, ticks, xs, top, bottom);
  body += "<g class=\"categories\">\n";
  for (std::size_t k = 0; k < c.categories.size(); ++k) {
    const double y0 = top + group_h * static_cast<double>(k) + group_pad / 2;
    body +=
        label_text(left - 8, y0 + (group_h - group_pad) / 2, "end", c.categories[k], label_chars);
  }
  body +=
      fmt::format("<path d=\"M{} {}V{}\" stroke=\"#333\"/>\n</g>\n", px(left), px(top), px(bottom));
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const auto& s = c.bars[i];
    body += fmt::format("<g class=\"series\" data-series=\"{}\">\n", escape(s.name));
    for (std::size_t k = 0; k < s.points.size() && k < c.categories.size(); ++k) {
      const auto& p = s.points[k];
      if (!std::isfinite(p.y)) continue;
      const double y = top + group_h * static_cast<double>(k) + group_pad / 2 +
                       static_cast<double>(i) * (bar_h + bar_gap);
      const double x0 = xs(std::max(xs.d0, std::min(0.0, xs.d1)));
      const double x1 = xs(p.y);
      const double w = std::max(std::fabs(x1 - x0), 1.0);  // a zero still shows as a sliver
      body += fmt::format(
          "<rect class=\"mark bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"{}\"><title>{}</title></rect>\n",
          px(std::min(x0, x1)), px(y), px(w), px(bar_h), fill_ref(c.id, i, cols[i]), cols[i],
          escape(c.categories[k] + " \u2014 " + s.name + ": " + value_text(value, p.y)));
      if (std::isfinite(p.low) && std::isfinite(p.high) && p.high > p.low)
        body += fmt::format(
            "<path class=\"whisker\" d=\"M{} {}H{}M{} {}v8M{} {}v8\" stroke=\"#222\" "
            "stroke-width=\"1.2\"/>\n",
            px(xs(p.low)), px(y + bar_h / 2), px(xs(p.high)), px(xs(p.low)), px(y + bar_h / 2 - 4),
            px(xs(p.high)), px(y + bar_h / 2 - 4));
      const double label_x = std::max(x1, std::isfinite(p.high) ? xs(p.high) : x1) + 5;
      body += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n",
                          px(label_x), px(y + bar_h / 2), escape(tick_text(value, p.y)));
    }
    body += "</g>\n";
  }

  std::vector<legend_entry> entries;
  for (std::size_t i = 0; i < c.bars.size(); ++i)
    entries.push_back(
        {c.bars[i].name, legend_entry::kind::swatch, i, false, fill_ref(c.id, i, cols[i])});
  std::string leg;
  const double legend_h = legend(leg, entries, bottom + 52);
  const double height = bottom + 52 + legend_h + 6;
  return open_svg(c.id, c.title, c.description, height, "bar-chart") + body + leg + "</svg>\n";
}

std::string render(const segment_map& m) {
  double biggest = 0, total = 0;
  for (const auto& s : m.segments) {
    biggest = std::max(biggest, s.size);
    total += s.size;
  }
  // The row span: a power of two holding the biggest segment and a 20th of the whole, so that
  // greedy packing needs at most about 40 rows.
  const double target = std::max(biggest, total / 20);
  const double span = target > 0 ? std::exp2(std::ceil(std::log2(target) - 1e-9)) : 1;
  struct placed {
    std::size_t index;
    double start;
  };
  std::vector<std::vector<placed>> rows;
  double used = span;
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    if (rows.empty() || used + m.segments[i].size > span * (1 + 1e-9)) {
      rows.emplace_back();
      used = 0;
    }
    rows.back().push_back({i, used});
    used += m.segments[i].size;
  }

  std::size_t label_chars = 4;
  std::vector<std::string> labels;
  for (const auto& r : rows) {
    const std::size_t first = r.front().index + 1, last = r.back().index + 1;
    labels.push_back(first == last ? fmt::format("#{}", first)
                                   : fmt::format("#{}\u2013{}", first, last));
    label_chars = std::max(label_chars, labels.back().size());
  }
  const double left = 16 + char_px * static_cast<double>(label_chars) + 10;
  const double right = width - 24, top = 10, row_h = 16, row_gap = 6;
  const double bottom = top + (row_h + row_gap) * static_cast<double>(rows.size()) + 2;

  axis a = m.scale;
  a.log = false;
  a.from_zero = true;
  // Quarters of the span: a power of two reads best split in powers of two.
  const scale xs{0, span, left, right, false};
  const std::vector<double> ticks{0, span / 4, span / 2, span * 3 / 4, span};

  const std::array<std::string_view, 4> state_colours{"#0072B2", "#D55E00", "#CC79A7", "#555555"};
  std::vector<std::string> cols;
  for (std::size_t i = 0; i < m.states.size(); ++i)
    cols.emplace_back(state_colours[std::min(i, state_colours.size() - 1)]);
  std::string body = defs(m.id, m.states.size(), cols);
  const auto state_fill = [&](std::size_t st) {
    return st < m.states.size() ? fill_ref(m.id, st, cols[st]) : std::string("#bbbbbb");
  };
  x_axis(body, a, ticks, xs, top, bottom);
  body += "<g class=\"segments\">\n";
  const auto width_of = [&](double bytes) { return xs(bytes) - xs(0); };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = top + static_cast<double>(r) * (row_h + row_gap) + 2;
    body += label_text(left - 8, y + row_h / 2, "end", labels[r], label_chars);
    for (const auto& p : rows[r]) {
      const auto& s = m.segments[p.index];
      body += fmt::format("<g class=\"segment\"><title>{}</title>\n", escape(s.tooltip));
      for (const auto& b : s.blocks) {
        body += fmt::format(
            "<rect class=\"mark block\" x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
            "fill=\"{}\"><title>{}</title></rect>\n",
            px(xs(p.start + b.offset)), px(y), std::max(width_of(b.size), 0.3), px(row_h),
            state_fill(b.state), escape(b.tooltip));
      }
      // The outline marks where one segment ends and the next begins.
      body += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"none\" stroke=\"#1b1b1b\" "
          "stroke-width=\"1\"/></g>\n",
          px(xs(p.start)), px(y), std::max(width_of(s.size), 0.5), px(row_h));
    }
  }
  body += "</g>\n";

  std::vector<legend_entry> entries;
  for (std::size_t i = 0; i < m.states.size(); ++i)
    entries.push_back({m.states[i], legend_entry::kind::swatch, i, false, state_fill(i)});
  std::string leg;
  const double legend_h = legend(leg, entries, bottom + 52);
  const double height = bottom + 52 + legend_h + 6;
  return open_svg(m.id, m.title, m.description, height, "segment-map") + body + leg + "</svg>\n";
}

std::string render(const strip_chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  std::vector<std::string> names;
  for (const auto& g : c.groups) {
    names.push_back(g.name);
    for (double v : g.samples)
      if (usable(c.value, v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (!std::isfinite(lo)) lo = hi = c.value.log ? 1 : 0;
  const std::size_t label_chars = row_label_chars(names);
  const double left = row_left(label_chars), right = width - 24, top = 10;
  const double band = 34, row_h = band + 16;
  const double bottom = top + row_h * static_cast<double>(c.groups.size());
  scale xs{0, 1, left, right, false};
  const auto ticks = make_ticks(c.value, lo, hi, xs);

  std::string body;
  x_axis(body, c.value, ticks, xs, top, bottom);
  body += "<g class=\"categories\">\n";
  for (std::size_t i = 0; i < c.groups.size(); ++i)
    body += label_text(left - 8, top + row_h * static_cast<double>(i) + row_h / 2, "end", names[i],
                       label_chars);
  body +=
      fmt::format("<path d=\"M{} {}V{}\" stroke=\"#333\"/>\n</g>\n", px(left), px(top), px(bottom));
  for (std::size_t i = 0; i < c.groups.size(); ++i)
    body += strip_row(c.groups[i], i, xs, top + row_h * static_cast<double>(i) + 8, band, c.value);

  std::vector<legend_entry> entries;
  for (std::size_t i = 0; i < c.groups.size(); ++i)
    entries.push_back({c.groups[i].name + ": samples, median (bar), quartiles (box)",
                       legend_entry::kind::swatch, i, false, colour(i)});
  std::string leg;
  const double legend_h = legend(leg, entries, bottom + 52);
  const double height = bottom + 52 + legend_h + 6;
  return open_svg(c.id, c.title, c.description, height, "strip-chart") + body + leg + "</svg>\n";
}

std::string render(const interval_chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  const auto extend = [&](double v) {
    if (!usable(c.value, v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  std::vector<std::string> names;
  for (const auto& r : c.rows) {
    names.push_back(r.name);
    for (double v : {r.estimate, r.low, r.high}) extend(v);
  }
  for (double g : c.guides) extend(g);
  for (const auto& z : c.zones)
    for (double v : {z.from, z.to}) extend(v);
  if (!std::isfinite(lo)) lo = hi = 0;
  const std::size_t label_chars = row_label_chars(names);
  const double left = row_left(label_chars), right = width - 24, top = 10, row_h = 30;
  const double bottom = top + row_h * static_cast<double>(std::max<std::size_t>(c.rows.size(), 1));
  scale xs{0, 1, left, right, false};
  const auto ticks = make_ticks(c.value, lo, hi, xs);
  const auto clamp_x = [&](double v) { return std::clamp(xs(v), left, right); };

  const std::array<std::string_view, 4> zone_colours{"#D55E00", "#009E73", "#777777", "#0072B2"};
  std::vector<std::string> cols;
  for (std::size_t i = 0; i < c.zones.size(); ++i)
    cols.emplace_back(zone_colours[std::min(i, zone_colours.size() - 1)]);
  // Zones are hatched (pattern 1 onwards): a solid zone would hide the grid.
  std::string body;
  {
    std::string pats;
    for (std::size_t i = 0; i < c.zones.size(); ++i)
      pats += pattern_def(escape(pattern_id(c.id, i + 1)), i + 1, cols[i]);
    if (!pats.empty()) body += "<defs>\n" + pats + "</defs>\n";
  }
  body += "<g class=\"zones\">\n";
  for (std::size_t i = 0; i < c.zones.size(); ++i) {
    const auto& z = c.zones[i];
    const double x0 = std::isinf(z.from) ? (z.from < 0 ? left : right) : clamp_x(z.from);
    const double x1 = std::isinf(z.to) ? (z.to < 0 ? left : right) : clamp_x(z.to);
    if (std::isnan(x0) || std::isnan(x1) || x1 <= x0) continue;
    body += fmt::format(
        "<rect class=\"zone\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
        "fill-opacity=\"0.35\"><title>{}</title></rect>\n",
        px(x0), px(top), px(x1 - x0), px(bottom - top), fill_ref(c.id, i + 1, cols[i]),
        escape(z.name));
  }
  body += "</g>\n";
  x_axis(body, c.value, ticks, xs, top, bottom);
  body += "<g class=\"guides\">";
  for (double g : c.guides)
    if (usable(c.value, g))
      body += fmt::format(
          "<path d=\"M{} {}V{}\" stroke=\"#777\" stroke-width=\"1.5\" stroke-dasharray=\"2 2\">"
          "<title>{}</title></path>",
          px(xs(g)), px(top), px(bottom), escape(c.guides_label + ": " + value_text(c.value, g)));
  body += "</g>\n<g class=\"categories\">\n";
  for (std::size_t i = 0; i < c.rows.size(); ++i)
    body += label_text(left - 8, top + row_h * (static_cast<double>(i) + 0.5), "end", names[i],
                       label_chars);
  body +=
      fmt::format("<path d=\"M{} {}V{}\" stroke=\"#333\"/>\n</g>\n", px(left), px(top), px(bottom));
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const auto& r = c.rows[i];
    const double y = top + row_h * (static_cast<double>(i) + 0.5);
    body += fmt::format("<g class=\"series\" data-series=\"{}\">\n", escape(r.name));
    if (usable(c.value, r.low) && usable(c.value, r.high) && r.high >= r.low)
      body += fmt::format(
          "<path class=\"mark interval\" d=\"M{} {}H{}M{} {}v12M{} {}v12\" stroke=\"#1b1b1b\" "
          "stroke-width=\"2\" fill=\"none\"><title>{}</title></path>\n",
          px(xs(r.low)), px(y), px(std::max(xs(r.high), xs(r.low) + 1)), px(xs(r.low)), px(y - 6),
          px(xs(r.high)), px(y - 6),
          escape(fmt::format("{}: interval {} to {}", r.name, value_text(c.value, r.low),
                             value_text(c.value, r.high))));
    if (usable(c.value, r.estimate))
      body +=
          marker(3, xs(r.estimate), y, "#1b1b1b", r.name + ": " + value_text(c.value, r.estimate));
    body += "</g>\n";
  }

  std::vector<legend_entry> entries;
  entries.push_back({"change of the median (diamond) and its interval",
                     legend_entry::kind::interval,
                     0,
                     false,
                     {}});
  for (std::size_t i = 0; i < c.zones.size(); ++i)
    entries.push_back({c.zones[i].name, legend_entry::kind::swatch, i + 1, false,
                       fill_ref(c.id, i + 1, cols[i])});
  if (!c.guides.empty() && !c.guides_label.empty())
    entries.push_back({c.guides_label, legend_entry::kind::guide, 0, false, {}});
  std::string leg;
  const double legend_h = legend(leg, entries, bottom + 52);
  const double height = bottom + 52 + legend_h + 6;
  return open_svg(c.id, c.title, c.description, height, "interval-chart") + body + leg + "</svg>\n";
}

std::string escape(std::string_view text) {
  return xml_escape(text);
}

}  // namespace pinbench::chart::svg
