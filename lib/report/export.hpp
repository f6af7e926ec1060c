// A result in the formats the CI performance trackers read, so that a team keeps its history
// where it already does: Bencher's Metric Format (BMF), github-action-benchmark's custom arrays
// and Google Benchmark's JSON (which its compare.py and several trackers read). Each is
// deterministic: the same result gives the same bytes. Only completed cases are exported, and
// only metrics with a finite sample; docs/ci-gating.md, "Feeding your tracker", shows each format.
#pragma once

#include <cstddef>
#include <string>

#include "result/result.hpp"

namespace pinbench::report {

/// A metric's name with its unit, as the exports name a measure: "bandwidth (GB/s)"; a metric
/// without a unit keeps its bare name.
[[nodiscard]] std::string metric_label(const result::metric& m);

/// Bencher's Metric Format: {"<scenario>/<case id>": {"<metric> (<unit>)": {"value": median,
/// "lower_value": first quartile, "upper_value": third quartile}}}, in the result's order.
[[nodiscard]] std::string to_bmf(const result::run_result& r);

/// github-action-benchmark's customBiggerIsBetter and customSmallerIsBetter arrays: one item
/// per metric of a completed case, {"name": "<scenario>/<case id> <metric>", "unit", "value":
/// median, "range": "± half the interquartile range", "extra": backend, device, samples and
/// stop reason}. Metrics whose direction is neither (counters that only inform) are left out.
struct tracker_arrays {
  std::string bigger, smaller;  ///< JSON arrays
  std::size_t left_out = 0;     ///< metrics without a direction
};
[[nodiscard]] tracker_arrays to_github_action_benchmark(const result::run_result& r);

/// Google Benchmark's JSON (json_schema_version 1): a `context` (date, host_name, num_cpus,
/// mhz_per_cpu where the result knows it, and pinbench's version, backend and device) and
/// `benchmarks`. Every time metric of a completed case is a benchmark named "<scenario>/<case
/// id>/<metric>": one `iteration` entry per sample (repetition_index, iterations 1, real_time
/// and cpu_time the sample in the metric's time unit: pinbench times wall-clock only, so
/// cpu_time repeats real_time), then, from 2 samples on, the `aggregate` entries mean, median,
/// stddev and cv. A case's other metrics ride on the first of its time metrics whose samples
/// they share (as many, from the same rounds) as user counters: the first rate in bytes as
/// `bytes_per_second` (B/s), the first rate in samples or items as `items_per_second`, the rest
/// under their metric_label(). A deterministic metric measured once (the allocator's policy
/// counters, fixed for a seed) is a counter of the case's first time metric, the same in each
/// entry. Any other metric that shares no time metric's samples is left out.
struct benchmark_json {
  std::string json;
  std::size_t left_out = 0;  ///< metrics of completed cases that could not be placed
};
[[nodiscard]] benchmark_json to_google_benchmark(const result::run_result& r);

}  // namespace pinbench::report
