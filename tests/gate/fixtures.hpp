// Synthetic results for the compare tests: deterministic samples (own generator, so the same on
// every standard library) in results shaped as `pinbench run` writes them.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "gate/statistics.hpp"
#include "result/result.hpp"
#include "result/result_io.hpp"

namespace pinbench::testing {

/// `n` samples around `center` with relative standard deviation `noise` (normal, Box-Muller
/// over the gate's splitmix generator), rounded to 4 significant digits so that goldens and
/// JSON files read back exactly.
inline std::vector<double> synthetic(double center, double noise, std::size_t n,
                                     std::uint64_t seed) {
  gate::rng g(seed);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    const double u1 = 1 - g.uniform(), u2 = g.uniform();
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    const double v = center * (1 + noise * z);
    const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
    out.push_back(std::round(v * scale) / scale);
  }
  return out;
}

/// `better` as the result file writes it: "higher", "lower" or "".
inline result::metric make_metric(std::string name, std::string unit, std::string_view better,
                                  std::vector<double> samples) {
  result::metric m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.better = result::direction_from(better).value();
  m.samples = std::move(samples);
  return m;
}

inline result::case_result make_case(std::string id, std::vector<result::metric> metrics) {
  result::case_result c;
  c.id = std::move(id);
  c.metrics = std::move(metrics);
  return c;
}

inline result::scenario_result make_scenario(std::string name, std::string kind,
                                             std::vector<result::case_result> cases,
                                             nlohmann::json gate = nlohmann::json::object()) {
  result::scenario_result s;
  s.name = std::move(name);
  s.kind = std::move(kind);
  s.cases = std::move(cases);
  s.gate = std::move(gate);
  return s;
}

/// A result on `backend` with a device of that name (and uuid when given).
inline result::run_result make_result(std::vector<result::scenario_result> scenarios,
                                      const std::string& backend = "host",
                                      const std::string& device = "host emulation (Test CPU)",
                                      const std::string& uuid = "",
                                      const std::string& created = "2026-01-01T00:00:00Z") {
  result::run_result r;
  r.tool_version = "0.1.0";
  r.tool_git = "test";
  r.created = created;
  r.backend = backend;
  nlohmann::json dev{{"name", device}};
  if (!uuid.empty()) dev["uuid"] = uuid;
  r.environment = {{"backend", backend}, {"device", dev}};
  r.scenarios = std::move(scenarios);
  return r;
}

/// A result with one scenario, one case, one metric.
inline result::run_result one_metric(const std::string& better, std::vector<double> samples,
                                     const std::string& unit = "ns",
                                     const std::string& metric = "copy_time") {
  return make_result({make_scenario(
      "s", "transfer",
      {make_case("bytes=1MiB", {make_metric(metric, unit, better, std::move(samples))})})});
}

/// The same as one_metric, the metric declared deterministic by its engine.
inline result::run_result one_deterministic(const std::string& better, std::vector<double> samples,
                                            const std::string& unit = "bytes") {
  auto r = one_metric(better, std::move(samples), unit, "reserved_bytes.all.peak");
  r.scenarios[0].cases[0].metrics[0].deterministic = true;
  return r;
}

/// One metric measured in rounds: `rounds[k]` are the samples of round k.
inline result::run_result one_metric_in_rounds(const std::string& better,
                                               const std::vector<std::vector<double>>& rounds) {
  result::metric m = make_metric("copy_time", "ns", better, {});
  for (std::size_t k = 0; k < rounds.size(); ++k)
    for (double x : rounds[k]) {
      m.samples.push_back(x);
      m.rounds.push_back(static_cast<std::uint32_t>(k));
    }
  auto r = make_result({make_scenario("s", "transfer", {make_case("bytes=1MiB", {m})})});
  r.repeat = static_cast<std::uint32_t>(rounds.size());
  return r;
}

inline void write_result(const std::filesystem::path& path, const result::run_result& r) {
  std::ofstream(path) << result::to_json(r).dump(2) << "\n";
}

}  // namespace pinbench::testing
