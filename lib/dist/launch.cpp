#include "dist/launch.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::dist {

namespace {

// An empty value counts as unset: scripts often `export RANK=` to clear a variable.
class environment {
 public:
  explicit environment(const std::function<const char*(const char*)>& getenv) : getenv_(getenv) {}

  [[nodiscard]] std::optional<std::string> get(const char* name) const {
    const char* value = getenv_ ? getenv_(name) : std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  }
  [[nodiscard]] bool has(const char* name) const { return get(name).has_value(); }

  /// The variable as an integer; nullopt when unset; input_error when it is not one.
  [[nodiscard]] std::optional<int> integer(const char* name) const {
    auto text = get(name);
    if (!text) return std::nullopt;
    if (auto value = parse(*text)) return value;
    throw input_error({}, fmt::format("environment {}", name),
                      fmt::format("expected an integer, got \"{}\"", *text));
  }

  [[nodiscard]] static std::optional<int> parse(std::string_view text) {
    int value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end) return std::nullopt;
    return value;
  }

 private:
  const std::function<const char*(const char*)>& getenv_;
};

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
  info.launcher = "mpirun";
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

/// This node's entry of SLURM_STEP_TASKS_PER_NODE ("2(x3),1": two tasks on each of the first
/// three nodes, one on the fourth); nullopt when it cannot be read.
std::optional<int> slurm_step_tasks_on_node(const std::string& spec, int node) {
  std::string_view rest = spec;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    int repeat = 1;
    if (auto open = item.find("(x"); open != std::string_view::npos) {
      if (item.back() != ')') return std::nullopt;
      auto count = environment::parse(item.substr(open + 2, item.size() - open - 3));
      if (!count || *count < 1) return std::nullopt;
      repeat = *count;
      item = item.substr(0, open);
    }
    auto tasks = environment::parse(item);
    if (!tasks || *tasks < 1) return std::nullopt;
    if (node < repeat) return tasks;
    node -= repeat;
  }
  return std::nullopt;
}

launch_info from_srun(const environment& env) {
  launch_info info;
  info.launcher = "srun";
  const char* size_name = env.has("SLURM_NTASKS") || !env.has("SLURM_NPROCS") ? "SLURM_NTASKS"
                                                                              : "SLURM_NPROCS";
  auto world = read_pair(env, {"SLURM_PROCID", size_name});
  info.rank = world->first;
  info.size = world->second;
  auto local_rank = env.integer("SLURM_LOCALID");
  if (!local_rank) return info;
  // The local size: SLURM_NTASKS_PER_NODE when it is a plain integer (--ntasks-per-node), else
  // this node's entry of SLURM_STEP_TASKS_PER_NODE, else the least that SLURM_LOCALID implies.
  std::optional<int> local_size;
  if (auto per_node = env.get("SLURM_NTASKS_PER_NODE")) local_size = environment::parse(*per_node);
  if (!local_size) {
    auto spec = env.get("SLURM_STEP_TASKS_PER_NODE");
    auto node = env.get("SLURM_NODEID");
    auto node_id = node ? environment::parse(*node) : std::nullopt;
    if (spec && node_id && *node_id >= 0) local_size = slurm_step_tasks_on_node(*spec, *node_id);
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
  info.launcher = "torchrun";
  auto world = read_pair(env, {"RANK", "WORLD_SIZE"});
  info.rank = world->first;
  info.size = world->second;
  set_local(info, read_pair(env, {"LOCAL_RANK", "LOCAL_WORLD_SIZE"}));
  return info;
}

}  // namespace

launch_info detect_launch(const std::function<const char*(const char*)>& getenv) {
  environment env(getenv);
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) return from_mpirun(env);
  if (env.has("SLURM_PROCID")) return from_srun(env);
  if (env.has("RANK") || env.has("WORLD_SIZE")) return from_torchrun(env);
  return {};
}

}  // namespace pinbench::dist
