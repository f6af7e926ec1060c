#include "measure/sampler.hpp"

#include <cmath>

#include "core/clock.hpp"
#include "core/interrupt.hpp"

namespace pinbench::measure {

sampler::sampler(const sampling& rule) : rule_(rule) {}

void sampler::start() {
  start_ns_ = now_ns();
}

void sampler::add(double headline_value) {
  ++n_;
  const double delta = headline_value - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (headline_value - mean_);
}

double sampler::noise() const {
  if (n_ < 2 || mean_ == 0) return 0;
  return std::sqrt(m2_ / static_cast<double>(n_ - 1)) / std::fabs(mean_);
}

bool sampler::done() {
  if (interrupt_requested()) {
    reason_ = result::stop_reason::interrupted;
    return true;
  }
  const auto n = static_cast<int>(n_);
  const std::int64_t elapsed = now_ns() - start_ns_;
  if (n >= rule_.max_samples) {
    reason_ = result::stop_reason::max_samples;
    return true;
  }
  // The timeout wins over min_samples: a case that cannot gather them in time stops anyway,
  // and says so. At least one sample is always taken.
  if (n >= 1 && elapsed >= rule_.timeout_ns) {
    reason_ = result::stop_reason::timeout;
    return true;
  }
  if (n >= rule_.min_samples && elapsed >= rule_.min_time_ns && noise() <= rule_.max_noise) {
    reason_ = result::stop_reason::converged;
    return true;
  }
  return false;
}

result::stop_reason sampler::reason_when_told_to_stop() const {
  if (static_cast<int>(n_) >= rule_.max_samples) return result::stop_reason::max_samples;
  if (now_ns() - start_ns_ >= rule_.timeout_ns) return result::stop_reason::timeout;
  return result::stop_reason::converged;
}

}  // namespace pinbench::measure
