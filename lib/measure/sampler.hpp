// The stopping rule for a case: warm-up, then samples until enough, stable enough, or out of time.
#pragma once

#include <cstdint>

#include "measure/case.hpp"
#include "result/result.hpp"

namespace pinbench::measure {

/// Feed it one headline value per sample; it says when to stop and why.
/// Stops when min_samples and min_time are met and the relative standard deviation of the
/// headline values is at most max_noise (converged), or at max_samples, or at the timeout, or
/// on Ctrl-C. Warm-up iterations are not fed to it.
class sampler {
 public:
  explicit sampler(const sampling& rule);

  /// Call once the warm-up is done: the clocks for min_time and timeout start here.
  void start();
  void add(double headline_value);

  [[nodiscard]] bool done();
  [[nodiscard]] result::stop_reason reason() const noexcept { return reason_; }
  /// Why sampling stopped when another process's rule ended it before this one's was met
  /// (measure_case's agree_to_stop): max_samples or timeout when this one reached them too,
  /// else converged (the other process's rule was met on its samples).
  [[nodiscard]] result::stop_reason reason_when_told_to_stop() const;
  [[nodiscard]] std::size_t count() const noexcept { return n_; }
  [[nodiscard]] double noise() const;  ///< current relative standard deviation

 private:
  sampling rule_;
  std::int64_t start_ns_ = 0;
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0;  // Welford's running moments: O(1) per sample
  result::stop_reason reason_ = result::stop_reason::converged;
};

}  // namespace pinbench::measure
