// A small SVG plotting layer for the HTML pages: line charts (linear or log x), horizontal bar
// charts, segment maps, strip plots of samples and interval charts. Every chart is accessible
// (role="img" named by its <title> and <desc>, axis labels with units, a legend) and reads without
// colour: each series has its own marker shape and dash pattern, each bar series and block state
// its own fill pattern. Used by chart/figure.cpp, the kinds' own figures and the comparison page
// (gate/).
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace pinbench::chart::svg {

/// `text` with &, <, >, " and ' escaped: safe in HTML/XML text and in quoted attributes.
[[nodiscard]] std::string escape(std::string_view text);

/// Tick label text for an axis value.
using tick_format = std::function<std::string(double)>;

/// "1.5", "20", "0.25", "1.2e+07": at most 3 significant digits, no trailing zeros.
[[nodiscard]] std::string short_number(double v);

struct axis {
  std::string label;      ///< shown beside the axis; includes the unit ("bandwidth (GB/s)")
  bool log = false;       ///< log scale (values must be > 0)
  double log_base = 2;    ///< ticks at powers of this base (2 for sizes, 10 otherwise)
  bool from_zero = true;  ///< linear axes: the range includes 0
  double max = std::numeric_limits<double>::quiet_NaN();  ///< a fixed upper end (100 for %)
  tick_format format;                                     ///< tick labels; short_number when empty
  std::string unit;  ///< appended to values in tooltips ("GB/s"); "" when ticks carry it
};

struct point {
  double x = 0, y = 0;
  /// An optional interval drawn as a whisker (the quartiles); NaN = none.
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
};

struct series {
  std::string name;
  std::vector<point> points;  ///< in x order for lines; one per category (x unused) for bars
};

/// Lines over a numeric x axis. Points with a non-finite coordinate are left out.
struct line_chart {
  std::string id;  ///< unique in the page; the ids of title, desc and patterns derive from it
  std::string title, description;
  axis x, y;
  std::vector<series> lines;
  bool markers = true;          ///< false for dense lines (thousands of points)
  std::vector<double> x_marks;  ///< vertical guides (e.g. iteration boundaries)
  std::string marks_label;      ///< legend entry for the guides
};

/// One horizontal bar per category and series (grouped), value labels at the bar ends.
struct bar_chart {
  std::string id, title, description;
  std::string category_label;  ///< what the categories are ("case")
  std::vector<std::string> categories;
  axis value;                ///< the value axis (horizontal)
  std::vector<series> bars;  ///< bars[s].points[c].y: series s in category c (NaN = none)
};

/// A memory map: segments in address order, packed left to right into rows of one byte span
/// (a power of two, so that no segment is split and at most about 40 rows are drawn), each
/// segment outlined and filled by its blocks' states.
struct segment_map {
  struct block {
    double offset = 0, size = 0;  ///< within the segment, in the scale's unit
    std::size_t state = 0;        ///< index into `states`
    std::string tooltip;
  };
  struct segment {
    double size = 0;  ///< in the scale's unit
    std::vector<block> blocks;
    std::string tooltip;
  };
  std::string id, title, description;
  /// Legend names, one per state (an empty name: unused, left out of the legend). State 0 is
  /// solid, 1 hatched, 2 dotted, 3 cross-hatched, each in its own colour.
  std::vector<std::string> states;
  std::vector<segment> segments;
  axis scale;  ///< the byte axis along a row (its label names the unit)
};

/// Samples as they fell: one row per group, every sample a dot (spread vertically in a fixed
/// pattern so that equal values stay visible), over a box from the first to the third quartile
/// with the median as a bar. Non-finite samples are left out.
struct strip_chart {
  struct group {
    std::string name;
    std::vector<double> samples;  ///< in the axis's unit
  };
  std::string id, title, description;
  axis value;  ///< the value axis (horizontal)
  std::vector<group> groups;
};

/// Intervals against limits: one row per interval (its estimate a marker, its bounds a
/// whisker), over shaded zones (what lies beyond a threshold) and vertical guides (the
/// thresholds themselves).
struct interval_chart {
  struct row {
    std::string name;
    double estimate = std::numeric_limits<double>::quiet_NaN();
    double low = std::numeric_limits<double>::quiet_NaN();  ///< NaN = no interval
    double high = std::numeric_limits<double>::quiet_NaN();
  };
  /// A shaded range of the value axis; an infinite end reaches the plot's edge.
  struct zone {
    double from = 0, to = 0;
    std::string name;  ///< legend entry
  };
  std::string id, title, description;
  axis value;  ///< the value axis (horizontal); its range holds every finite bound and guide
  std::vector<row> rows;
  std::vector<zone> zones;     ///< up to four, each in its own fill pattern
  std::vector<double> guides;  ///< vertical dashed lines
  std::string guides_label;    ///< legend entry for the guides
};

[[nodiscard]] std::string render(const line_chart& c);
[[nodiscard]] std::string render(const bar_chart& c);
[[nodiscard]] std::string render(const segment_map& m);
[[nodiscard]] std::string render(const strip_chart& c);
[[nodiscard]] std::string render(const interval_chart& c);

}  // namespace pinbench::chart::svg
