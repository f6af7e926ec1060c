// What Slurm tells a task of its step, in Slurm's own formats: hostlists ("node[01-04,07]"),
// task counts per node ("2(x3),1"), which process-management interface (PMI) srun offers, and
// the tcp rendezvous of a step whose MPI cannot start (srun --mpi=none, MpiDefault=none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dist/environment.hpp"

namespace pinbench::dist::slurm {

/// The first host of a hostlist: "node[01-04,07],gpu5" -> "node01", "rack[2-3]-n[7,9]" ->
/// "rack2-n7" (zero padding kept). nullopt when it is empty or its brackets do not close.
[[nodiscard]] std::optional<std::string> first_host(std::string_view hostlist);

/// Entry `node` (0-based) of a task count per node ("2(x3),1": two tasks on each of the first
/// three nodes, one on the fourth); nullopt when it cannot be read or is too short.
[[nodiscard]] std::optional<int> tasks_on_node(std::string_view spec, int node);

/// Step ids from here up are Slurm's own steps, not an srun's: the batch script (0xFFFFFFFB),
/// the extern step (0xFFFFFFFC), salloc's interactive step (0xFFFFFFFA) and the like.
inline constexpr std::uint64_t first_reserved_step_id = 0xFFFFFFF0;

/// What srun offers this task to start an MPI with, as the step's mpi plugin set it up.
struct pmi_offer {
  enum class kind { none, pmi2, pmix };
  kind offered = kind::none;
  std::string evidence;  ///< the variables that say so, for messages ("PMIX_NAMESPACE=...")
};
[[nodiscard]] pmi_offer offered_pmi(const environment& env);

/// Ports a step's tcp rendezvous is derived into: below Linux's ephemeral range (32768 up), so
/// that no outgoing connection holds one by chance.
inline constexpr int rendezvous_port_base = 20000;
inline constexpr int rendezvous_port_span = 10000;

/// The port of a step: base + (job x 101 + step) mod span. 101 is prime to the span: the
/// first steps (0 to 100) of consecutive jobs get different ports, and a job's own steps do.
/// Two steps that meet on one port anyway are kept apart by launch_token.
[[nodiscard]] int derived_port(std::uint64_t job_id, std::uint64_t step_id);

/// What tells this step's ranks from another's on the same port: (job << 32) | step.
[[nodiscard]] std::uint64_t launch_token(std::uint64_t job_id, std::uint64_t step_id);

/// Where rank 0 of an srun step listens for the tcp transport: the step's first node
/// (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST / SLURM_NODELIST), at PINBENCH_RENDEZVOUS_PORT
/// or the port derived from SLURM_JOB_ID and SLURM_STEP_ID. `from` says which, in words.
/// Throws environment_error (exit 3) naming what is missing, input_error (exit 2) for a
/// malformed value.
struct rendezvous {
  std::string host;
  int port = 0;
  std::string from;
  std::uint64_t token = 0;  ///< launch_token of the step (0 when its ids are unknown)
};
[[nodiscard]] rendezvous step_rendezvous(const environment& env);

}  // namespace pinbench::dist::slurm
