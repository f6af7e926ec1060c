// The measurement protocol every engine follows: warm-up runs, then samples until the sampling
// rule stops (enough and stable, max_samples, timeout, Ctrl-C), with the metrics of a sample
// recorded through handles declared before sampling. An engine supplies what one warm-up and
// one sample do; measure_case does the rest, the same way for every kind.
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
};

/// Runs the protocol for one case and sets r.stopped. Ctrl-C during the warm-up throws
/// interrupted_error (nothing was measured); during sampling it stops the loop, keeps the
/// samples taken and marks the case interrupted (status "interrupted"), unless no sample was
/// taken at all, which throws interrupted_error. Other exceptions of the engine propagate: the
/// runner records the case as failed.
void measure_case(result::case_result& r, const sampling& rule, const sample_loop& loop);

}  // namespace pinbench::measure
