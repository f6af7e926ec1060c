// The measurement protocol: warm-up, sampling under the stop rule, Ctrl-C, verification.
#include "measure/protocol.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "measure/sample_guard.hpp"
#include "measure/sampler.hpp"

namespace pinbench::measure {

void metric_handle::append(const std::vector<double>& values) const {
  auto& samples = get().samples;
  samples.insert(samples.end(), values.begin(), values.end());
}

metric_handle declare(result::case_result& r, std::string name, std::string unit,
                      result::direction better) {
  const auto& m = r.add(std::move(name), std::move(unit), better);
  return metric_handle(r, static_cast<std::size_t>(&m - r.metrics.data()));
}

namespace {

// Forgets what a sample recorded: every metric back to its count before the sample.
void drop_sample(result::case_result& r, const std::vector<std::size_t>& counts_before) {
  for (std::size_t i = 0; i < r.metrics.size(); ++i)
    r.metrics[i].samples.resize(i < counts_before.size() ? counts_before[i] : 0);
}

}  // namespace

void measure_case(result::case_result& r, const sampling& rule, const sample_loop& loop) {
  for (int i = 0; i < rule.warmup; ++i) {
    throw_if_interrupted();
    loop.warm_up();
  }
  if (loop.before_sampling) loop.before_sampling();

  sampler stop_rule(rule);
  stop_rule.start();
  bool cut = false;
  bool agreed_early = false;  // stopped on another process's word before this rule was done
  // A spoiled sample is taken again at most this often in a case: a device that stays
  // throttled then has its samples kept (the guard is told, and its owner warns) rather than
  // the case never ending.
  sample_guard* guard = current_sample_guard();
  const int max_discards = std::max(rule.min_samples, 1);
  int discards = 0;
  std::vector<std::size_t> counts_before;
  for (;;) {
    if (guard != nullptr) {
      counts_before.clear();
      for (const auto& m : r.metrics) counts_before.push_back(m.samples.size());
      guard->sample_starting();
    }
    std::optional<double> headline;
    try {
      headline = loop.sample();
    } catch (const interrupted_error&) {
      headline.reset();
    }
    bool discarded = false;
    if (headline && guard != nullptr) {
      if (const std::string why = guard->spoiled(); !why.empty()) {
        if (discards < max_discards) {
          drop_sample(r, counts_before);
          guard->discarded();
          discarded = true;
          ++discards;
        } else {
          guard->kept_spoiled();
        }
      }
    }
    if (headline && !discarded) stop_rule.add(*headline);
    cut = !headline;
    const bool own = cut || (!discarded && stop_rule.done());
    if (!loop.agree_to_stop) {
      if (own) break;
      continue;
    }
    const bool agreed = loop.agree_to_stop(own);
    if (cut) break;
    if (interrupt_requested()) {
      (void)stop_rule.done();  // records the interrupt as the reason
      break;
    }
    if (agreed) {
      agreed_early = !own;
      break;
    }
  }

  if (stop_rule.count() == 0) throw interrupted_error();
  r.stopped = cut            ? result::stop_reason::interrupted
              : agreed_early ? stop_rule.reason_when_told_to_stop()
                             : stop_rule.reason();
  if (r.stopped == result::stop_reason::interrupted) r.status = result::case_status::interrupted;
  verify_case(r, loop.verify);
}

void verify_case(result::case_result& r, const verify_fn& verify) {
  if (!verify || r.stopped == result::stop_reason::interrupted) return;
  record_verification(r, verify());
}

void record_verification(result::case_result& r, const std::string& problem, bool all_checked) {
  r.extra["verified"] = all_checked && problem.empty();
  if (problem.empty() || r.stopped == result::stop_reason::interrupted) return;
  r.status = result::case_status::error;
  r.message = "verification failed: " + problem;
}

}  // namespace pinbench::measure
