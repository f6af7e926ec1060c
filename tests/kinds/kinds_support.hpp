// What the kinds' tests share: looking up a case and its metrics in a run's result.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "result/result.hpp"

namespace pinbench::testing {

inline const result::case_result& find_case(const result::run_result& r, const std::string& id) {
  for (const auto& c : r.scenarios.at(0).cases)
    if (c.id == id) return c;
  FAIL("no case " << id);
  throw;
}

inline const result::metric& metric_of(const result::case_result& c, const std::string& name) {
  const auto* m = c.find(name);
  INFO(name);
  REQUIRE(m != nullptr);
  return *m;
}

/// The one sample of a counter (a metric measured once per case).
inline double counter(const result::case_result& c, const std::string& name) {
  const auto* m = c.find(name);
  INFO(name);
  REQUIRE(m != nullptr);
  REQUIRE(m->samples.size() == 1);
  return m->samples[0];
}

}  // namespace pinbench::testing
