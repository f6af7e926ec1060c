// `pinbench compare`: pairs the cases of two results, judges every metric (ratio of medians,
// bootstrap interval, Mann-Whitney test, threshold) and decides the exit code of a CI gate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "result/result.hpp"

namespace pinbench::gate {

/// The two results cannot be compared (different backends or devices). Exit 3.
class incomparable_error : public environment_error {
 public:
  using environment_error::environment_error;
};

enum class verdict {
  regression,    ///< worse beyond the threshold: interval wholly beyond it, test significant
  improvement,   ///< better beyond the threshold, likewise
  unchanged,     ///< the interval lies wholly within the requested threshold
  inconclusive,  ///< anything else: too few samples, too noisy, or no baseline to judge by
  failed,        ///< the case ran in the baseline but failed in the current result
  info           ///< a metric without a direction: shown, never gated
};
[[nodiscard]] std::string_view to_string(verdict v) noexcept;

/// When the gate fails. `inconclusive` also fails (exit 3) on inconclusive gated metrics and on
/// gated cases that vanished from the current result; `never` only reports.
enum class fail_on { regression, inconclusive, never };
[[nodiscard]] std::optional<fail_on> parse_fail_on(std::string_view text) noexcept;
[[nodiscard]] std::string_view to_string(fail_on f) noexcept;

struct options {
  double threshold = 0.05;   ///< smallest relative change of the median that matters
  double confidence = 0.95;  ///< of the bootstrap interval; the test's level is 1 - confidence
  std::size_t resamples = 2000;
  std::uint64_t seed = 1;
  double noise_multiple = 2;    ///< threshold floor: this many times the baseline's relative noise
  std::size_t min_samples = 3;  ///< per side, for a statistical verdict
  fail_on fail = fail_on::regression;
  bool allow_env_mismatch = false;
  /// Pass a comparison with no gated row at all (no case, or no gated metric, in common);
  /// otherwise it exits 3: a renamed scenario or changed case ids must not pass a gate.
  bool allow_empty = false;
  std::vector<std::string> metrics;  ///< only these metric names (empty = all)
};

/// Which term set the threshold of a row.
enum class threshold_source { option, gate, noise };
[[nodiscard]] std::string_view to_string(threshold_source s) noexcept;

/// One side of a row.
struct side {
  std::size_t n = 0;  ///< finite samples
  double median = 0;
  std::size_t rounds = 1;  ///< rounds the samples came from (`run --repeat`, or several files)
};

/// One compared metric of one case (or, with `metric` empty, a case that failed on a side).
struct row {
  std::string scenario, case_id, metric, unit;
  result::direction better = result::direction::none;
  bool gated = false;  ///< counts for the exit code (every metric with a direction)
  side base, current;
  double ratio = 0;                    ///< median(current) / median(base); NaN when undefined
  std::optional<double> ci_lo, ci_hi;  ///< bootstrap interval of the ratio
  std::optional<double> p_value;       ///< Mann-Whitney, two-sided
  std::string test;                    ///< "exact", "normal", or "" (not run)
  double threshold = 0;                ///< the one regression/improvement had to exceed
  double requested = 0;  ///< max(--threshold, gate): what `unchanged` must stay within
  threshold_source source = threshold_source::option;
  /// Relative noise: with rounds on either side, the spread of round medians (both sides
  /// pooled, see between_round_noise); else the baseline's samples' 1.4826 MAD / median.
  double noise = 0;
  bool round_noise = false;  ///< `noise` is the spread between rounds
  /// Degrees of freedom of the spread between rounds (rounds - 1 over the sides; 0 otherwise)
  /// and its upper confidence bound at `confidence`, which the noise floor is taken from: a
  /// spread that three rounds a side show may well be twice as large.
  std::size_t noise_freedom = 0;
  double noise_bound = 0;
  bool deterministic = false;  ///< both sides' engines declared it: judged exactly
  verdict result = verdict::inconclusive;
  std::string reason;  ///< one sentence: why this verdict
};

/// A case (or a metric of a paired case) found on one side only.
struct unpaired {
  std::string scenario, case_id, metric;  ///< metric empty: the whole case
  bool gated = false;                     ///< it has (had) a metric with a direction
};

struct endpoint {
  std::string label;        ///< the file as given
  std::string backend;      ///< "host" | "cuda" | ""
  std::string device;       ///< device name ("" when unknown)
  std::string device_uuid;  ///< "" when unknown
  std::string created;
  std::string tool_version;
  std::vector<std::string> scenarios;  ///< the scenarios the result holds, in its order
};

struct comparison {
  endpoint base, current;
  options settings;
  std::string env_mismatch;  ///< why the environments differ ("" = they match)
  std::vector<row> rows;
  std::vector<unpaired> only_in_base, only_in_current;
  std::vector<std::string> warnings;
  /// Two `pinbench tune` results: what their answers say side by side (the answer changed or
  /// held, the goal met on each side, what was asked differently); empty otherwise.
  std::vector<std::string> tune_notes;
  /// Replays of a PyTorch snapshot on either side: how far each reproduced PyTorch's
  /// decisions (info.pytorch_decisions), where that differs or falls short; empty otherwise.
  std::vector<std::string> replay_notes;

  [[nodiscard]] std::size_t count(verdict v, bool gated_only = true) const;
  /// Rows that count for the exit code.
  [[nodiscard]] std::size_t gated_rows() const;
  /// 0 no gated regression, 1 at least one (or a failed case), 3 nothing gated to compare
  /// (unless options::allow_empty), or inconclusive or vanished gated metrics under
  /// fail_on::inconclusive; fail_on::never gives 0.
  [[nodiscard]] int exit_code() const;
  /// "1 regression, 2 improvements, 8 unchanged, ..." over gated rows, then info and unpaired.
  [[nodiscard]] std::string summary_line() const;
  /// What the exit code means for this comparison: "gate passed", "gate failed: ...".
  [[nodiscard]] std::string outcome_line() const;
};

/// Why two results may not be compared ("" when they may): different backends, or different
/// devices (by UUID when both have one, else by name).
[[nodiscard]] std::string environment_mismatch(const result::run_result& base,
                                               const result::run_result& current);

/// How the replays of PyTorch snapshots on both sides checked against PyTorch's decisions
/// (comparison::replay_notes): a line per case pair that differs or falls short, one line when
/// every such case reproduced PyTorch exactly on both sides.
[[nodiscard]] std::vector<std::string> replay_notes(const result::run_result& base,
                                                    const result::run_result& current,
                                                    const std::string& base_label,
                                                    const std::string& current_label);

/// What two tune results' answers say side by side (comparison::tune_notes).
[[nodiscard]] std::vector<std::string> tune_notes(const result::run_result& base,
                                                  const result::run_result& current,
                                                  const std::string& base_label,
                                                  const std::string& current_label);

/// Compares `current` with `base`. Throws incomparable_error when the environments differ and
/// `allow_env_mismatch` is off, input_error for a case id repeated within one scenario.
[[nodiscard]] comparison compare(const result::run_result& base, const result::run_result& current,
                                 const options& opts, const std::string& base_label = "base",
                                 const std::string& current_label = "current");

}  // namespace pinbench::gate
