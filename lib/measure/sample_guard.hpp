// A sample taken while something spoiled it (the watched GPU throttled) is thrown away and taken
// again, as nvbench does: the runner installs a guard around a case (`run --discard-on-throttle`)
// and the protocol (measure_case) asks it about every sample, so no engine has to know of it.
#pragma once

#include <string>

namespace pinbench::measure {

class sample_guard {
 public:
  virtual ~sample_guard() = default;
  /// A sample begins.
  virtual void sample_starting() = 0;
  /// Why the sample just taken must be taken again ("hw_thermal_slowdown"); "" to keep it.
  [[nodiscard]] virtual std::string spoiled() = 0;
  /// The protocol threw that sample away.
  virtual void discarded() = 0;
  /// The protocol kept that sample all the same: the case had min_samples retakes already (a
  /// device that stays throttled must not keep a case from ending). The guard's owner says so
  /// in the case's warnings, with what it knows of why.
  virtual void kept_spoiled() = 0;
};

/// The guard measure_case consults; nullptr when none is installed.
[[nodiscard]] sample_guard* current_sample_guard() noexcept;

/// Installs a guard for the life of the scope (one at a time per process; scopes nest).
class scoped_sample_guard {
 public:
  explicit scoped_sample_guard(sample_guard& g) noexcept;
  ~scoped_sample_guard();
  scoped_sample_guard(const scoped_sample_guard&) = delete;
  scoped_sample_guard& operator=(const scoped_sample_guard&) = delete;

 private:
  sample_guard* previous_;
};

}  // namespace pinbench::measure
