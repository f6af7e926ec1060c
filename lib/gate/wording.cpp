// Number formatting for comparisons; see wording.hpp.
#include "gate/wording.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/units.hpp"

namespace pinbench::gate::detail {

std::string signed_percent(double change) {
  if (!std::isfinite(change)) return "-";
  const double pct = change * 100;
  // "-0.0%" reads as a decline that is not there.
  if (std::fabs(pct) < 0.05) return "+0.0%";
  return fmt::format("{:+.1f}%", pct);
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.1f}%", fraction * 100);
}

std::string change_text(double ratio) {
  return signed_percent(ratio - 1);
}

std::string interval_text(std::optional<double> lo, std::optional<double> hi) {
  if (!lo || !hi) return "-";
  return fmt::format("[{}, {}]", change_text(*lo),
                     std::isinf(*hi) ? std::string("+inf") : change_text(*hi));
}

std::string p_text(std::optional<double> p) {
  if (!p || !std::isfinite(*p)) return "-";
  if (*p < 0.001) return "<0.001";
  if (*p >= 0.995) return "1.00";
  if (*p >= 0.1) return fmt::format("{:.2f}", *p);
  return fmt::format("{:.3f}", *p);
}

std::vector<std::string> row_cells(const row& r) {
  const std::string case_id = r.case_id.empty() ? "(default)" : r.case_id;
  if (r.metric.empty())
    return {case_id, "(case)", "-", "-", "-", "-", "-", "-", std::string(to_string(r.result))};
  std::string threshold = "-";
  if (r.gated) {
    threshold = percent(r.threshold);
    if (r.source != threshold_source::option)
      threshold += " (" + std::string(to_string(r.source)) + ")";
  }
  return {case_id,
          r.metric,
          r.base.n > 0 ? format_value(r.base.median, r.unit, unit_place::in_cell) : "-",
          r.current.n > 0 ? format_value(r.current.median, r.unit, unit_place::in_cell) : "-",
          change_text(r.ratio),
          interval_text(r.ci_lo, r.ci_hi),
          p_text(r.p_value),
          threshold,
          std::string(to_string(r.result))};
}

std::vector<std::string> row_headers(const options& o) {
  return {"case",    "metric",    "base",
          "current", "change",    fmt::format("{:g}% interval", o.confidence * 100),
          "p",       "threshold", "verdict"};
}

std::string endpoint_text(const endpoint& e) {
  std::string out = e.label;
  for (const auto* part : {&e.backend, &e.device, &e.created})
    if (!part->empty()) out += " \u00b7 " + *part;
  return out;
}

std::string rule_text(const options& o) {
  std::string out = "a change counts beyond " + percent(o.threshold) + " (or the scenario's gate";
  if (o.noise_multiple > 0)
    out += fmt::format(
        ", or {:g} x the noise: between rounds (its {:g}% upper bound), else in the baseline",
        o.noise_multiple, o.confidence * 100);
  out += std::string("); fail on ") + std::string(to_string(o.fail));
  if (!o.metrics.empty()) {
    out += "; metrics:";
    for (const auto& m : o.metrics) out += " " + m;
  }
  return out;
}

std::string method_text(const options& o) {
  return fmt::format(
      "{:g}% bootstrap interval of the ratio of medians ({} resamples, seed {}; rounds, then "
      "samples in them), Mann-Whitney U at p < {:.2g}; deterministic metrics exactly",
      o.confidence * 100, o.resamples, o.seed, 1 - o.confidence);
}

std::string subject_text(const std::string& scenario, const std::string& case_id,
                         const std::string& metric) {
  std::string out = scenario;
  out += " " + (case_id.empty() ? std::string("(default)") : case_id);
  if (!metric.empty()) out += " " + metric;
  return out;
}

bool needs_attention(const row& r) {
  return r.gated && (r.result == verdict::regression || r.result == verdict::failed ||
                     r.result == verdict::inconclusive);
}

}  // namespace pinbench::gate::detail
