// `pinbench check`: a result judged against absolute references per system, as HPC centres
// judge a node (ReFrame's `(value, lower, upper, unit)`): "is this node normal?" on the first
// run, with no history. A REFS file (pinbench.references/1) maps system selectors (device name
// pattern, backend, host pattern) to references; `check --init` writes one from a known-good
// result. docs/ci-gating.md, "Judging a node against references".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document/document.hpp"

#include "result/result.hpp"

namespace pinbench::gate {

/// The schema a REFS file names.
inline constexpr const char* references_schema = "pinbench.references/1";

/// Which systems a set of references is for; an empty field matches anything. Patterns are
/// shell patterns (`*`, `?`, `[...]`, core/text.hpp glob_match).
struct system_selector {
  std::string device;   ///< on environment.device.name (a rank's device under a launch)
  std::string backend;  ///< "cuda" or "host", exactly
  std::string host;     ///< on environment.host.hostname (a rank's host under a launch)
};

/// One reference figure: the median of `metric` in the cases of `scenario` whose id (without a
/// launch's "rank=N,") matches `case_pattern` must lie within [value + lower x |value|,
/// value + upper x |value|]. A missing bound (null) is open: ReFrame's convention, lower <= 0
/// <= upper, and lower >= -1 for a reference of 0 or more.
struct reference {
  std::string scenario, case_pattern, metric, unit;
  double value = 0;
  std::optional<double> lower, upper;
  std::string where;  ///< its JSON path in the file: "systems[0].references[3]"

  [[nodiscard]] std::optional<double> lower_bound() const;
  [[nodiscard]] std::optional<double> upper_bound() const;
};

struct reference_system {
  std::string name;  ///< the file's "name", else the selector in words
  system_selector select;
  std::vector<reference> references;
  std::string where;  ///< "systems[0]"
};

struct reference_file {
  std::string path;
  std::vector<reference_system> systems;
};

/// Reads and validates a REFS file: anything malformed is an input_error (exit 2) naming the
/// file, the JSON path and what was expected.
[[nodiscard]] reference_file read_references(const std::string& path);
/// The same from a parsed document (`path` names it in errors).
[[nodiscard]] reference_file parse_references(const nlohmann::ordered_json& doc,
                                              const std::string& path);

/// What became of one reference for one case.
enum class check_outcome {
  inside,   ///< the median lies within the bounds
  outside,  ///< it does not: exit 1
  failed,   ///< the case failed: exit 1
  missing   ///< the scenario ran but no such case or metric was measured (skipped, interrupted)
};
[[nodiscard]] std::string_view to_string(check_outcome o) noexcept;

struct reference_check {
  std::string system;  ///< reference_system::name
  std::string scenario, case_id, metric, unit;
  double reference_value = 0;
  std::optional<double> lower, upper;              ///< the fractions, as the file gives them
  std::optional<double> lower_bound, upper_bound;  ///< in the metric's unit
  std::optional<double> measured;                  ///< the median of the finite samples
  std::size_t samples = 0;
  check_outcome outcome = check_outcome::missing;
  double excess = 0;   ///< outside: how far beyond its bound, as a fraction of the bound
  std::string reason;  ///< one line: why it is outside, failed or missing; "" when inside
  std::string where;   ///< the reference's JSON path
};

struct check_options {
  /// Also fail (exit 3) when a referenced figure is missing from a scenario that ran.
  bool strict = false;
};

/// The outcome of `pinbench check`.
struct reference_report {
  std::string result_path, references_path;
  std::string backend, device, host;    ///< the result's system (rank 0's under a launch)
  std::vector<std::string> systems;     ///< the names of the systems that applied
  std::vector<std::string> selectors;   ///< every system of the file, in words
  std::vector<reference_check> checks;  ///< in the file's order
  /// References of applying systems whose scenario is not in the result: "scenario: case
  /// metric", listed, never failing (the run measured a part of the suite).
  std::vector<std::string> not_run;
  check_options settings;

  [[nodiscard]] std::size_t count(check_outcome o) const;
  /// 0 every referenced figure inside; 1 one outside or failed; 3 no system applies, nothing
  /// referenced was measured, or (strict) a referenced figure is missing.
  [[nodiscard]] int exit_code() const;
  /// One line: what the exit code means, naming the first failed case, else the figure
  /// farthest outside.
  [[nodiscard]] std::string outcome_line() const;
};

/// Judges `r` (read from `result_path`) against `refs`. A reference whose unit differs from
/// the measured metric's is an input_error naming the REFS file and the reference's path.
[[nodiscard]] reference_report check_references(const result::run_result& r,
                                                const std::string& result_path,
                                                const reference_file& refs,
                                                const check_options& opts = {});

/// How `check --init` sets the bounds of each reference from the result's samples.
struct init_options {
  /// The observed spread on each side (median to its quartile, or to the farthest round median
  /// where the metric has rounds) times this factor...
  double widen = 2;
  /// ...and at least this fraction of the value.
  double floor = 0.10;
  /// Only the worse side bounded (lower for higher-is-better metrics, upper for lower-is-better).
  bool one_sided = false;
  std::string host;    ///< a host pattern for the selector ("" = any host)
  std::string name;    ///< the system's name ("" = the device and backend)
  std::string source;  ///< the result's path, recorded in the file
};

/// A REFS document from a known-good result: one system (the result's device, quoted as a
/// pattern, and backend), one reference per completed case and headline metric with a
/// direction (`headlines` gives a scenario's, in order), at its median. A deterministic metric
/// (the allocator's policy counters) is referenced exactly (both fractions 0). A metric whose
/// median is 0 but is not deterministic cannot be bounded by fractions and is left out:
/// `left_out` counts those.
[[nodiscard]] nlohmann::ordered_json init_references(
    const result::run_result& r, const init_options& opts,
    const std::function<std::vector<std::string>(const result::scenario_result&)>& headlines,
    std::size_t& left_out);

/// The check as a document (its outcome in the title, the result and references applied, per
/// scenario its figures against their bounds with the reasons of those outside, what was not
/// run, the counts) and as JUnit tests (one test case per check: outside and failed are
/// failures, missing ones skipped, or failures when strict); to_table, to_markdown and
/// to_junit render them, to_json writes pinbench.check/1.
[[nodiscard]] document::document check_document(const reference_report& rep);
[[nodiscard]] document::test_report check_tests(const reference_report& rep);
[[nodiscard]] std::string to_table(const reference_report& rep, bool color = false);
[[nodiscard]] nlohmann::ordered_json to_json(const reference_report& rep);
[[nodiscard]] std::string to_markdown(const reference_report& rep);
[[nodiscard]] std::string to_junit(const reference_report& rep);

}  // namespace pinbench::gate
