// Writers of a comparison: the terminal table, JSON (pinbench.compare/1), Markdown for
// $GITHUB_STEP_SUMMARY or a PR comment, JUnit XML so that CI systems show failures natively, and
// an HTML page with the samples and intervals drawn.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "document/document.hpp"
#include "gate/compare.hpp"

namespace pinbench::gate {

/// The comparison as a document: its outcome in the title, both sides, the rule and the
/// statistics, warnings; per scenario one row per compared metric with the reasons of those
/// that need attention beneath (a scenario with none is folded where a format folds); the
/// unpaired cases; the counts and what the exit code means. to_table and to_markdown render it.
[[nodiscard]] document::document comparison_document(const comparison& c);

/// The gated rows as tests, one suite per scenario (to_junit renders them).
[[nodiscard]] document::test_report comparison_tests(const comparison& c);

/// Per scenario one row per compared metric (base and current medians, change, interval, p,
/// threshold, verdict), the reasons of regressions, failures and inconclusive rows beneath,
/// then the unpaired cases, the counts and what the exit code means. `color`: ANSI verdicts.
[[nodiscard]] std::string to_table(const comparison& c, bool color = false);

/// `pinbench.compare/1`: both endpoints, the settings, every row (both sides' n and median,
/// ratio, interval, p-value, test, threshold and its source, noise, verdict, reason), the
/// unpaired cases, counts and the exit code. Non-finite numbers are null.
[[nodiscard]] nlohmann::ordered_json to_json(const comparison& c);

/// comparison_document as GitHub-flavoured Markdown (a scenario with nothing that needs
/// attention folded in a <details> block).
[[nodiscard]] std::string to_markdown(const comparison& c);

/// comparison_tests as JUnit XML: one testsuite per scenario, one testcase per gated metric (and
/// per failed or vanished gated case). Regressions and failed cases are <failure>s; inconclusive
/// rows are <skipped>, or <failure>s under fail_on::inconclusive; the rest pass.
[[nodiscard]] std::string to_junit(const comparison& c);

/// One self-contained HTML page (no script, nothing from the network: the report's
/// Content-Security-Policy): the outcome, both sides, every row in a table with regressions and
/// failed cases first, then for each gated metric, in the same order, its baseline and
/// candidate samples (a strip plot each, on one axis) and the change of the median with its
/// interval against the threshold. `base` and `current` are the results `c` was computed from
/// (their samples are drawn; a row whose case is not found draws no dots).
[[nodiscard]] std::string to_html(const comparison& c, const result::run_result& base,
                                  const result::run_result& current);

}  // namespace pinbench::gate
