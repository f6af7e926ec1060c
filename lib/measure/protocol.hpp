// The measurement protocol every engine follows: warm-up runs, then samples until the sampling
// rule stops (enough and stable, max_samples, timeout, Ctrl-C), with the metrics of a sample
// recorded through handles declared before sampling, then verification. An engine supplies what
// one warm-up, one sample and its check do; measure_case does the rest, the same way for every
// kind.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "measure/case.hpp"
#include "result/result.hpp"

namespace pinbench::measure {

/// A metric of the case being measured. Unlike a reference into case_result::metrics, it stays
/// valid while more metrics are declared.
class metric_handle {
 public:
  void add(double value) const { get().samples.push_back(value); }
  void append(const std::vector<double>& values) const;
  [[nodiscard]] result::metric& get() const { return case_->metrics[index_]; }

 private:
  friend metric_handle declare(result::case_result&, std::string, std::string, result::direction);
  metric_handle(result::case_result& c, std::size_t index) : case_(&c), index_(index) {}
  result::case_result* case_;
  std::size_t index_;
};

/// Declares a metric of `r` (or finds the one of that name): its unit ("ns", "GB/s",
/// "fraction", "bytes", "count", ...) and which way is better.
[[nodiscard]] metric_handle declare(result::case_result& r, std::string name, std::string unit,
                                    result::direction better);

/// A case's verification: "" when what was measured arrived intact, else what was wrong.
using verify_fn = std::function<std::string()>;

/// What an engine supplies to the protocol.
struct sample_loop {
  /// One untimed run; called `sampling.warmup` times.
  std::function<void()> warm_up;
  /// Called once after the warm-up, before the first sample (baselines a sample is judged
  /// against); may be empty.
  std::function<void()> before_sampling = {};
  /// Takes one sample, records its metrics, and returns its headline value (what the stop rule
  /// watches), or nothing when Ctrl-C cut the sample short (it is not counted).
  std::function<std::optional<double>()> sample;
  /// Processes that measure together (a collective under a launch) must take the same number
  /// of samples, or one waits for ever in a collective the others left. Called after every
  /// sample with this process's own decision (true: stop), it returns the decision to obey
  /// (rank 0's, broadcast). Ctrl-C stops this process whatever it returns. Empty: its own rule.
  std::function<bool(bool stop)> agree_to_stop = {};
  /// Checks, once sampling is done, that what was measured arrived intact: "" when it did, else
  /// what was wrong. Not called when the case was interrupted; verify_case records what it
  /// found. Empty: the case is not verified (a scenario's `verify: false`).
  verify_fn verify = {};
};

/// Runs the protocol for one case and sets r.stopped. Ctrl-C during the warm-up throws
/// interrupted_error (nothing was measured); during sampling it stops the loop, keeps the
/// samples taken and marks the case interrupted (status "interrupted"), unless no sample was
/// taken at all, which throws interrupted_error. Other exceptions of the engine propagate: the
/// runner records the case as failed. Then verification: verify_case with loop.verify.
void measure_case(result::case_result& r, const sampling& rule, const sample_loop& loop);

/// Verification, the protocol's last step: unless `r` was interrupted (or `verify` is empty),
/// runs `verify` and records what it found (record_verification). measure_case takes it from
/// sample_loop::verify; an engine calls it itself when its check must wait for work done after
/// sampling.
void verify_case(result::case_result& r, const verify_fn& verify);

/// Records what verification found in `r`: extra["verified"], true when `problem` is empty and
/// `all_checked` (false: part of what was measured could not be checked, though nothing was
/// found wrong). A problem makes the case an error, "verification failed: " + problem, unless
/// the case was interrupted, which keeps that status. For an engine that verifies as it samples
/// (the loader, each run); verify_case calls it for the others.
void record_verification(result::case_result& r, const std::string& problem,
                         bool all_checked = true);

}  // namespace pinbench::measure
