// The MPI communicator: libpinbench_mpi.so (lib/dist/mpi_plugin/), dlopen()ed at run time so
// that the pinbench executable never needs libmpi where it is not launched by mpirun or srun.
#pragma once

#include <memory>
#include <string>

#include "dist/communicator.hpp"

namespace pinbench::dist {

/// Where the plugin is looked for: PINBENCH_MPI_PLUGIN when set, else libpinbench_mpi.so in the
/// directory of the running executable.
[[nodiscard]] std::string mpi_plugin_path();

/// Loads the plugin and initialises MPI (MPI_Init_thread, FUNNELED): the
/// communicator finalises it when destroyed, unless a call timed out or failed (MPI_Finalize
/// would wait for the lost rank; the launcher ends the others instead). Throws
/// environment_error when the plugin cannot load, naming why, or when MPI's rank and size
/// differ from the launcher's environment.
[[nodiscard]] std::unique_ptr<communicator> connect_mpi(const launch_info& launch);

}  // namespace pinbench::dist
