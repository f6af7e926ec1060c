// A launched run's ranks against each other: which rank's case reads far from the fleet. Many
// nodes measuring the same case should agree; one that does not (a GPU on a degraded PCIe link,
// a node with a noisy neighbour) is what a user of `mpirun pinbench` is looking for.
#pragma once

#include <string>
#include <vector>

#include "result/result.hpp"

namespace pinbench::report {

/// One rank's median of one metric of one case, far from the other ranks'.
struct fleet_outlier {
  std::string scenario, case_id;  ///< case id without the rank
  std::string metric, unit;
  int rank = 0;
  std::string host, device;  ///< from the result's `ranks` block
  double value = 0;          ///< this rank's median
  double fleet_median = 0;   ///< the median of every rank's median
  double mads = 0;           ///< |value - fleet_median| in MADs (infinite when the MAD is 0)
};

/// The rule: among the ranks that measured a case (at least 3, status ok), a rank's median of a
/// headline metric (the kind's; every metric with a direction when the kind names none) is an
/// outlier when its robust z-score, 0.6745 * |x - median| / MAD, exceeds 3.5 (Iglewicz and
/// Hoaglin's cut), and it is also at least 5% from the fleet's median (a fleet that agrees to a
/// fraction of a percent has a tiny MAD; a 1% difference is no fault). A MAD of 0 (the other
/// ranks agree exactly) leaves the 5% alone.
inline constexpr double outlier_z = 3.5;
inline constexpr double outlier_min_relative = 0.05;
[[nodiscard]] std::vector<fleet_outlier> fleet_outliers(const result::run_result& r);

/// "rank 3 (node7, NVIDIA H200 #1): bytes=1MiB bandwidth 11.2 GB/s, fleet median 24.5 GB/s
/// (-54%, 5.1 MADs)".
[[nodiscard]] std::string describe(const fleet_outlier& o);

}  // namespace pinbench::report
