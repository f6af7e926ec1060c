// How a result reads: the terminal table, CSV, Markdown, and the HTML report with its charts.
// The result file itself is written and read by result/result_io.hpp.
#pragma once

#include <string>
#include <vector>

#include "document/document.hpp"
#include "result/result.hpp"

namespace pinbench::report {

/// A result as a document: the header (backend, device, CPU), its warnings, per scenario a
/// table of its cases (the kind's headline metrics: median and ±noise; n, stop, status; a
/// failed case's message cut to `message_limit` characters, 0 = whole) with its verdict,
/// conditions, replay checks, warnings and fleet outliers; the counts; and for a tune result
/// its trials, why, and the answer last.
[[nodiscard]] document::document run_document(const result::run_result& r,
                                              std::size_t message_limit);

/// What `pinbench tune` prints: the trials ranked (the tuner's columns), the chosen one
/// marked, why, the counts and the answer to paste, last.
[[nodiscard]] document::document tune_document(const result::run_result& r);

/// The human table: a header naming backend and device, then per scenario one row per case
/// with the kind's headline metrics (median, and ±relative noise), the stop reason, and the
/// status; errors shown with their message. `color` adds ANSI colours (terminal only).
[[nodiscard]] std::string to_table(const result::run_result& r, bool color = false);

/// Long-format CSV: one row per case and metric (scenario, case, status, backend, params...,
/// metric, unit, n, median, mean, min, max, q1, q3, stdev). RFC 4180 quoting.
[[nodiscard]] std::string to_csv(const result::run_result& r);

/// Markdown: one section per scenario with a table, the backend/device stated at the top.
[[nodiscard]] std::string to_markdown(const result::run_result& r);

/// The HTML report: one self-contained page (no script, nothing loaded from the network, said
/// so by a Content-Security-Policy) with the environment, then per scenario its charts as
/// inline SVG (those its kind draws where the result holds chartable data: see each kind's
/// description in kinds/) and its table. Every text from the result is escaped. Deterministic: the
/// same result gives the same page.
[[nodiscard]] std::string to_html(const result::run_result& r);

/// The metrics a scenario's table shows, in order: its kind's headline metrics (those some
/// case has), or every metric for a kind without them. What `check --init` references.
[[nodiscard]] std::vector<std::string> headline_metrics(const result::scenario_result& s);

/// A `pinbench tune` result as the terminal shows it: the backend, the trials ranked (the
/// tuner's columns), the chosen one marked, the verdict and the answer to paste. A result
/// without a `tune` block gives "".
[[nodiscard]] std::string tune_text(const result::run_result& r);
}  // namespace pinbench::report
