#include "bench/result.hpp"

namespace pinbench::bench {

summary metric::summarize() const { return pinbench::summarize(samples); }

std::string_view to_string(stop_reason r) noexcept {
  switch (r) {
    case stop_reason::converged: return "converged";
    case stop_reason::max_samples: return "max_samples";
    case stop_reason::timeout: return "timeout";
    case stop_reason::interrupted: return "interrupted";
    case stop_reason::single: return "single";
  }
  return "?";
}

const metric* case_result::find(std::string_view name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

metric& case_result::add(std::string name, std::string unit, std::string better) {
  for (auto& m : metrics)
    if (m.name == name) return m;
  metrics.push_back(metric{std::move(name), std::move(unit), std::move(better), {}});
  return metrics.back();
}

bool run_result::any_failed() const {
  for (const auto& s : scenarios)
    for (const auto& c : s.cases)
      if (c.status == "error") return true;
  return false;
}

}  // namespace pinbench::bench
