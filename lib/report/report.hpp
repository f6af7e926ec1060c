// Writers and readers of results: pinbench.result/1 JSON, the terminal table, CSV, Markdown,
// and the HTML report with its charts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/result.hpp"

namespace pinbench::report {

/// The `pinbench.result/1` document (schema, tool, created, environment, scenarios with
/// cases, each metric with unit, better, summary and raw samples).
/// Ordered so that keys stay in the order written (metrics in the order the engine recorded
/// them); it converts implicitly to nlohmann::json, which sorts keys instead.
/// Non-finite numbers are written as null, never as NaN or inf.
[[nodiscard]] nlohmann::ordered_json to_json(const bench::run_result& r);

/// Reads a result document back; unknown fields are ignored. Throws input_error naming the
/// file and the JSON path for a document that is not pinbench.result/1. A null where a number
/// belongs reads as NaN. Summaries are not read: they are recomputed from the samples.
[[nodiscard]] bench::run_result from_json(const nlohmann::json& j, const std::string& source);

/// Same, for a document parsed with nlohmann::ordered_json::parse: keeps the file's metric
/// order (a nlohmann::json document has its metrics in alphabetical order).
[[nodiscard]] bench::run_result from_json(const nlohmann::ordered_json& j,
                                          const std::string& source);

/// The human table: a header naming backend and device, then per scenario one row per case
/// with the kind's headline metrics (median, and ±relative noise), the stop reason, and the
/// status; errors shown with their message. `color` adds ANSI colours (terminal only).
[[nodiscard]] std::string to_table(const bench::run_result& r, bool color = false);

/// Long-format CSV: one row per case and metric (scenario, case, status, backend, params...,
/// metric, unit, n, median, mean, min, max, q1, q3, stdev). RFC 4180 quoting.
[[nodiscard]] std::string to_csv(const bench::run_result& r);

/// Markdown: one section per scenario with a table, the backend/device stated at the top.
[[nodiscard]] std::string to_markdown(const bench::run_result& r);

/// The HTML report: one self-contained page (no script, nothing loaded from the network, said
/// so by a Content-Security-Policy) with the environment, then per scenario its charts as
/// inline SVG (where the result holds chartable data: transfer bandwidth by size, loader
/// throughput and gpu_busy by the swept param, allocator peaks, timeline and segment map) and
/// its table. Every text from the result is escaped. Deterministic: the same result gives the
/// same page.
[[nodiscard]] std::string to_html(const bench::run_result& r);

/// Reads a pinbench.result/1 file (the order of its metrics kept). Throws input_error naming
/// the file, and the line and column of a JSON syntax error or the JSON path of a problem.
[[nodiscard]] bench::run_result read_result_file(const std::string& path);

}  // namespace pinbench::report
