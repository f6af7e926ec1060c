// What a result's document (documents.cpp) and the HTML page share: which columns a scenario
// shows and how each cell reads. Internal to report/.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.hpp"
#include "document/document.hpp"
#include "result/result.hpp"

namespace pinbench::report::detail {

using document::align;

/// One scenario as a grid of text cells, before it becomes a document's table or HTML. Its
/// columns are the document's: a header (the metric name, with its unit when cells do not
/// carry it) and an alignment.
struct grid {
  std::vector<document::column> columns;
  std::vector<std::vector<std::string>> rows;  ///< one per case; the status cell is last
  std::vector<result::case_status> statuses;   ///< per row: the case's status (for colour)
};

/// The metrics a scenario's table shows, in order: the kind's headline metrics (those marked
/// optional only when some case has them), or for other kinds every metric, in the order
/// they first appear.
[[nodiscard]] std::vector<std::string> shown_metrics(const result::scenario_result& s);

/// "median ±noise%" for a metric (noise = stdev / mean, shown when the samples vary), "-"
/// when it is absent or has no samples.
[[nodiscard]] std::string metric_cell(const result::metric* m);

/// The scenario's grid: case, shown metrics, n, stop, status ("error: message" with the message
/// cut to `message_limit` characters; 0 keeps it whole). Newlines in messages become spaces.
[[nodiscard]] grid scenario_grid(const result::scenario_result& s, std::size_t message_limit);

/// What a reader needs to judge the scenario's figures, one line each, from its cases' extras
/// (docs/judging-figures.md): the link ceiling(s) behind "% of link", the GPU's clocks and
/// throttling while the cases ran (when one was watched), where host memory was placed, and why
/// a collective has no busbw.
/// Empty when the cases record none of these.
[[nodiscard]] std::vector<std::string> scenario_conditions(const result::scenario_result& s);

/// What each case's replay of a recording says of itself against the recording (a PyTorch
/// snapshot: info.pytorch_decisions), one "CASE: SUMMARY" line per case that has one.
[[nodiscard]] std::vector<std::string> replay_checks(const result::scenario_result& s);

/// "pinbench 0.1.0 · backend: host (emulated: X) · CPU · created".
[[nodiscard]] std::string header_line(const result::run_result& r);

/// Environment warnings (environment.warnings), one string each.
[[nodiscard]] std::vector<std::string> environment_warnings(const result::run_result& r);

/// "N cases, M failed, K interrupted; backend: host — host-emulated figures, not GPU figures".
[[nodiscard]] std::string footer_line(const result::run_result& r);

}  // namespace pinbench::report::detail
