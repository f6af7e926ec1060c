// A launched run (mpirun, srun, torchrun): the ranks agree on what they run before anything is
// measured, and rank 0 makes one result of every rank's cases.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/communicator.hpp"
#include "result/result.hpp"

namespace pinbench::run {

/// Compares every rank's fingerprint (plan::fingerprint) with rank 0's; throws input_error (exit 2,
/// the same on every rank, since all see every fingerprint) naming the ranks that differ.
void check_same_inputs(dist::communicator& world, const std::string& fingerprint,
                       dist::timeout limit);

/// This rank's entry of the result's `ranks` block: rank, local_rank, host, launcher, transport
/// (how the ranks talked: "mpi", "tcp"), backend, device.
[[nodiscard]] nlohmann::json rank_entry(const dist::launch_info& launch, std::string_view transport,
                                        const nlohmann::json& environment);

/// Every rank's result as one (rank 0's run facts and environment): each scenario holds every
/// rank's cases, rank by rank, each case marked with its rank and its id prefixed "rank=N,";
/// `ranks` lists where each rank ran; interrupted when any rank was.
[[nodiscard]] result::run_result merge_ranks(const std::vector<result::run_result>& per_rank,
                                             const std::vector<nlohmann::json>& entries);

/// After a lost rank (`lost_rank` as lost_rank_json gives it), whether the rank `rank` writes
/// what was measured: rank 0, or rank 1 when rank 0 is the one lost; none when rank 0 stopped
/// the launch (rank 0 writes).
[[nodiscard]] bool writes_after_loss(int rank, const nlohmann::json& lost_rank);

/// Gathers every rank's result on every rank (the result JSON through the communicator) and
/// merges them (merge_ranks).
[[nodiscard]] result::run_result gather_ranks(dist::communicator& world,
                                              const result::run_result& mine,
                                              const nlohmann::json& my_entry, dist::timeout limit);

}  // namespace pinbench::run
