// Charts from results: a figure (an inline SVG with its title and caption), the sweep chart
// that shows one metric over a scenario's matrix (or a lone case's samples), and the units
// that axes are labelled in.
// A kind's figures (kinds/<kind>/) are built from these; the report lays them out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result/result.hpp"

namespace pinbench::chart {

/// One chart as the report shows it: inline SVG, a bold title and a caption.
struct figure {
  std::string svg;
  std::string title, caption;
};

/// A metric's values as an axis shows them: divided into a readable unit named in the label.
struct display_unit {
  double divisor = 1;
  std::string name;  ///< "" = no unit
};

/// The unit an axis of `unit` values up to `biggest` reads best in: ns as ns/us/ms/s, bytes as
/// bytes/KiB/MiB/GiB, fractions as %, anything else as it is.
[[nodiscard]] display_unit unit_for(std::string_view unit, double biggest);

/// "name (unit)", or the name alone when there is no unit.
[[nodiscard]] std::string axis_label(const std::string& name, const display_unit& u);

/// Bytes as people read them ("1.5 MiB"); "-" for a negative value.
[[nodiscard]] std::string bytes_text(double v);

/// The cases a chart of `metric` can use: completed, with at least one finite sample.
[[nodiscard]] std::vector<const result::case_result*> chartable(const result::scenario_result& s,
                                                                std::string_view metric);

/// The samples of one case's metric as they fell (a strip plot over the quartile box and the
/// median), on an axis labelled with the metric and its unit. None when the case has no finite
/// sample of it.
[[nodiscard]] std::optional<figure> distribution_chart(const result::scenario_result& s,
                                                       const result::case_result& c,
                                                       const std::string& chart_id,
                                                       const std::string& metric);

/// One metric over the scenario's swept params: a line chart over the first numeric param
/// (`prefer` first when it varies), one line per combination of the others; with no numeric
/// param, one bar per case. With one case only, the distribution of its samples
/// (distribution_chart); none without a case to chart.
[[nodiscard]] std::optional<figure> sweep_chart(const result::scenario_result& s,
                                                const std::string& chart_id,
                                                const std::string& metric,
                                                const std::string& prefer);

/// A sweep chart a kind asks for: its id (after the scenario's prefix), the metric, and the
/// param to put on the x axis when it varies ("" = the first numeric one).
struct sweep {
  std::string id;
  std::string metric;
  std::string prefer;
};

/// The sweep charts that the scenario's cases can show, ids prefixed with `id_prefix`.
[[nodiscard]] std::vector<figure> sweep_charts(const result::scenario_result& s,
                                               const std::string& id_prefix,
                                               const std::vector<sweep>& sweeps);

/// The trials of a `pinbench tune` result, ranked as the tuner ranked them: one bar each (its
/// value, tune_block::chart_metric), those that meet the goal and those that miss it as two
/// series, the chosen one marked "->" and the setting in use "(in use)"; the target in the
/// caption. At most `max_bars` trials (the chosen and the one in use always among them).
/// None when no trial has a value.
[[nodiscard]] std::optional<figure> tune_chart(const result::tune_block& t,
                                               const std::string& chart_id,
                                               std::size_t max_bars = 24);

}  // namespace pinbench::chart
