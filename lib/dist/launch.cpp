#include "dist/launch.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "dist/environment.hpp"
#include "dist/slurm.hpp"

namespace pinbench::dist {

std::string_view to_string(launcher_kind k) noexcept {
  switch (k) {
    case launcher_kind::none:
      return "none";
    case launcher_kind::mpirun:
      return "mpirun";
    case launcher_kind::srun:
      return "srun";
    case launcher_kind::torchrun:
      return "torchrun";
  }
  return "?";
}

namespace {

[[noreturn]] void malformed(const char* name, const std::string& value, const std::string& want) {
  throw input_error({}, fmt::format("environment {}", name),
                    fmt::format("expected {}, got \"{}\"", want, value));
}

/// A (rank, size) pair of variables: both or neither; size >= 1, rank in [0, size).
struct pair_names {
  const char* rank;
  const char* size;
};

std::optional<std::pair<int, int>> read_pair(const environment& env, pair_names names) {
  auto rank = env.integer(names.rank);
  auto size = env.integer(names.size);
  if (!rank && !size) return std::nullopt;
  if (!rank) {
    throw input_error({}, fmt::format("environment {}", names.rank),
                      fmt::format("not set, but {} is", names.size));
  }
  if (!size) {
    throw input_error({}, fmt::format("environment {}", names.size),
                      fmt::format("not set, but {} is", names.rank));
  }
  if (*size < 1) malformed(names.size, std::to_string(*size), "a size of at least 1");
  if (*rank < 0 || *rank >= *size) {
    malformed(names.rank, std::to_string(*rank), fmt::format("a rank in [0, {})", *size));
  }
  return std::pair{*rank, *size};
}

void set_local(launch_info& info, const std::optional<std::pair<int, int>>& local) {
  // Without local variables a rank is taken to be alone on its host (GPU 0).
  if (!local) return;
  info.local_rank = local->first;
  info.local_size = local->second;
}

launch_info from_mpirun(const environment& env) {
  launch_info info;
  info.launcher = launcher_kind::mpirun;
  // PMIx-based OpenMPI sets PMIX_RANK too; it stands in for OMPI_COMM_WORLD_RANK when that is
  // missing (PMIX_RANK alone is not mpirun's: srun --mpi=pmix sets it as well).
  const char* rank_name = env.has("OMPI_COMM_WORLD_RANK") || !env.has("PMIX_RANK")
                              ? "OMPI_COMM_WORLD_RANK"
                              : "PMIX_RANK";
  auto world = read_pair(env, {rank_name, "OMPI_COMM_WORLD_SIZE"});
  info.rank = world->first;
  info.size = world->second;
  set_local(info, read_pair(env, {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}));
  return info;
}

launch_info from_srun(const environment& env) {
  launch_info info;
  info.launcher = launcher_kind::srun;
  // The step's own task count first: a step started with --preserve-env (or salloc's
  // interactive step) carries the job's SLURM_NTASKS, which may be more tasks than it has.
  const char* size_name = env.has("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS"
                          : env.has("SLURM_NTASKS") || !env.has("SLURM_NPROCS") ? "SLURM_NTASKS"
                                                                                : "SLURM_NPROCS";
  auto world = read_pair(env, {"SLURM_PROCID", size_name});
  info.rank = world->first;
  info.size = world->second;
  auto local_rank = env.integer("SLURM_LOCALID");
  if (!local_rank) return info;
  // The local size: this node's entry of SLURM_STEP_TASKS_PER_NODE (the step's own layout),
  // else SLURM_NTASKS_PER_NODE when it is a plain integer (the job's --ntasks-per-node, which
  // a step of fewer tasks may not fill), else the least that SLURM_LOCALID implies.
  std::optional<int> local_size;
  auto spec = env.get("SLURM_STEP_TASKS_PER_NODE");
  auto node = env.get("SLURM_NODEID");
  auto node_id = node ? environment::parse(*node) : std::nullopt;
  if (spec && node_id && *node_id >= 0) local_size = slurm::tasks_on_node(*spec, *node_id);
  if (!local_size) {
    if (auto per_node = env.get("SLURM_NTASKS_PER_NODE"))
      local_size = environment::parse(*per_node);
  }
  if (!local_size) local_size = std::max(*local_rank + 1, 1);
  if (*local_rank < 0 || *local_rank >= *local_size) {
    malformed("SLURM_LOCALID", std::to_string(*local_rank),
              fmt::format("a local rank in [0, {}) (tasks on this node)", *local_size));
  }
  info.local_rank = *local_rank;
  info.local_size = *local_size;
  return info;
}

launch_info from_torchrun(const environment& env) {
  launch_info info;
  info.launcher = launcher_kind::torchrun;
  auto world = read_pair(env, {"RANK", "WORLD_SIZE"});
  info.rank = world->first;
  info.size = world->second;
  set_local(info, read_pair(env, {"LOCAL_RANK", "LOCAL_WORLD_SIZE"}));
  return info;
}

}  // namespace

launch_info detect_launch(const getenv_fn& getenv) {
  environment env(getenv);
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) return from_mpirun(env);
  // A task of an srun step has a step id; a batch script (sbatch) has SLURM_PROCID=0 and the
  // job's SLURM_NTASKS too, but no step, and salloc's interactive step a reserved id: each is
  // one process, which srun may start many of.
  if (env.has("SLURM_PROCID")) {
    const auto step = env.get_either("SLURM_STEP_ID", "SLURM_STEPID");
    const auto id = step ? environment::parse_unsigned(*step) : std::nullopt;
    if (step && !(id && *id >= slurm::first_reserved_step_id)) return from_srun(env);
  }
  if (env.has("RANK") || env.has("WORLD_SIZE")) return from_torchrun(env);
  return {};
}

}  // namespace pinbench::dist
