#include "dist/slurm.hpp"

#include <array>

#include <fmt/format.h>

#include "core/error.hpp"

namespace pinbench::dist::slurm {

std::optional<std::string> first_host(std::string_view hostlist) {
  // Up to the first top-level comma; each bracket contributes the low end of its first range.
  std::string host;
  std::size_t i = 0;
  while (i < hostlist.size() && hostlist[i] != ',') {
    if (hostlist[i] != '[') {
      host += hostlist[i++];
      continue;
    }
    const auto close = hostlist.find(']', i);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view inside = hostlist.substr(i + 1, close - i - 1);
    inside = inside.substr(0, inside.find_first_of(",-"));
    if (inside.empty()) return std::nullopt;
    host += inside;
    i = close + 1;
  }
  if (host.empty()) return std::nullopt;
  return host;
}

std::optional<int> tasks_on_node(std::string_view spec, int node) {
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

pmi_offer offered_pmi(const environment& env) {
  // Slurm's pmix plugin gives each task its namespace and rank and the URI of the PMIx server
  // in its slurmstepd; the pmi2 plugin an inherited socket (PMI_FD). --mpi=none gives neither,
  // and sets no SLURM_MPI_TYPE.
  const auto type = env.get("SLURM_MPI_TYPE");
  const std::string type_text = type ? fmt::format(", SLURM_MPI_TYPE={}", *type) : "";
  const auto ns = env.get("PMIX_NAMESPACE");
  const bool pmix_server = env.has("PMIX_SERVER_URI41") || env.has("PMIX_SERVER_URI4") ||
                           env.has("PMIX_SERVER_URI3") || env.has("PMIX_SERVER_URI21") ||
                           env.has("PMIX_SERVER_URI2");
  if (ns && env.has("PMIX_RANK") && pmix_server) {
    return {pmi_offer::kind::pmix, fmt::format("PMIX_NAMESPACE={}{}", *ns, type_text)};
  }
  if (auto fd = env.get("PMI_FD"); fd && env.has("PMI_RANK")) {
    return {pmi_offer::kind::pmi2, fmt::format("PMI_FD={}{}", *fd, type_text)};
  }
  return {pmi_offer::kind::none,
          type ? fmt::format("no PMIX_* or PMI_FD variable, SLURM_MPI_TYPE={}", *type)
               : "no PMIX_* or PMI_FD variable: srun --mpi=none, or MpiDefault=none"};
}

std::uint64_t launch_token(std::uint64_t job_id, std::uint64_t step_id) {
  return (job_id << 32U) | (step_id & 0xFFFFFFFFU);
}

int derived_port(std::uint64_t job_id, std::uint64_t step_id) {
  const std::uint64_t span = rendezvous_port_span;
  return rendezvous_port_base + static_cast<int>(((job_id % span) * 101 + step_id % span) % span);
}

namespace {

// A job or step id: nullopt when unset, input_error when it is not one.
std::optional<std::uint64_t> slurm_id(const environment& env, const char* name, const char* older) {
  auto text = env.get_either(name, older);
  if (!text) return std::nullopt;
  auto value = environment::parse_unsigned(*text);
  if (!value) {
    throw input_error({}, fmt::format("environment {}", env.has(name) ? name : older),
                      fmt::format("expected a Slurm id (an unsigned integer), got \"{}\"", *text));
  }
  return value;
}

}  // namespace

rendezvous step_rendezvous(const environment& env) {
  rendezvous at;
  static constexpr std::array<const char*, 3> lists{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                                                    "SLURM_NODELIST"};
  const char* list_name = nullptr;
  for (const char* name : lists) {
    if (auto list = env.get(name)) {
      auto host = first_host(*list);
      if (!host) {
        throw input_error(
            {}, fmt::format("environment {}", name),
            fmt::format("expected a Slurm hostlist (\"node[01-04,07]\"), got \"{}\"", *list));
      }
      at.host = *host;
      list_name = name;
      break;
    }
  }
  if (list_name == nullptr) {
    throw environment_error(
        "the tcp transport under srun needs SLURM_STEP_NODELIST or SLURM_JOB_NODELIST, and "
        "neither is set: it meets on the step's first node (or set "
        "PINBENCH_RENDEZVOUS=host:port)");
  }
  const auto job = slurm_id(env, "SLURM_JOB_ID", "SLURM_JOBID");
  const auto step = slurm_id(env, "SLURM_STEP_ID", "SLURM_STEPID");
  if (job && step) at.token = launch_token(*job, *step);
  if (auto port_text = env.get("PINBENCH_RENDEZVOUS_PORT")) {
    auto port = environment::parse(*port_text);
    if (!port || *port < 1 || *port > 65535) {
      throw input_error({}, "environment PINBENCH_RENDEZVOUS_PORT",
                        fmt::format("expected a port in [1, 65535], got \"{}\"", *port_text));
    }
    at.port = *port;
    at.from = fmt::format("the first node of {}, port PINBENCH_RENDEZVOUS_PORT", list_name);
    return at;
  }
  if (!job || !step) {
    throw environment_error(fmt::format(
        "the tcp transport under srun needs {}: its port is derived from the job and step ids "
        "(or set PINBENCH_RENDEZVOUS_PORT, or PINBENCH_RENDEZVOUS=host:port)",
        !job ? "SLURM_JOB_ID" : "SLURM_STEP_ID"));
  }
  at.port = derived_port(*job, *step);
  at.from = fmt::format("the first node of {}, the port of job {} step {}", list_name, *job, *step);
  return at;
}

}  // namespace pinbench::dist::slurm
