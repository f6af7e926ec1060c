// Which rank this process is, as the launcher that started it says: mpirun (OpenMPI's
// OMPI_COMM_WORLD_*), srun (SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID) or torchrun
// (RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE). pinbench has no launcher of its own.
#pragma once

#include <string>
#include <string_view>

#include "dist/environment.hpp"

namespace pinbench::dist {

/// What started this process: none (a plain process), or a launcher pinbench reads.
enum class launcher_kind { none, mpirun, srun, torchrun };
/// "none", "mpirun", "srun" or "torchrun": for results and messages.
[[nodiscard]] std::string_view to_string(launcher_kind k) noexcept;

struct launch_info {
  launcher_kind launcher = launcher_kind::none;
  int rank = 0, size = 1;              ///< this process among all of them
  int local_rank = 0, local_size = 1;  ///< among those on this host: picks the local GPU
  [[nodiscard]] bool launched() const { return size > 1 || launcher != launcher_kind::none; }
};

/// Reads the launcher's variables through `getenv` (the process environment by default). When
/// several launchers' variables are present, mpirun's win, then srun's, then torchrun's. An
/// allocation sets SLURM_* for a plain process too: SLURM_NTASKS alone is not a launch, and
/// neither is a batch script's SLURM_PROCID without a step id (or with a reserved one); a task
/// of an srun step is. Throws input_error (exit 2) for a malformed environment: a value that is
/// not an integer, a rank outside [0, size), a size below 1, one variable of a pair without the
/// other; the message names the variable and what it holds.
[[nodiscard]] launch_info detect_launch(const getenv_fn& getenv = {});

}  // namespace pinbench::dist
