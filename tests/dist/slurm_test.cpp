// Slurm's formats and what srun offers a task, on environments written as Slurm 22.05 sets them
// (seen under srun --mpi=none, --mpi=pmix and --mpi=pmi2); and the transport a launch picks.
// A real Slurm runs in tests/scripts/test_slurm.sh.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/error.hpp"
#include "dist/communicator.hpp"
#include "dist/slurm.hpp"
#include "support.hpp"

using namespace pinbench::dist;
using Catch::Contains;

namespace {

using pinbench::testing::env_map;

getenv_fn from(const env_map& env) {
  return pinbench::testing::getenv_of(env);
}

// A task of `srun -n 2 --mpi=none` on one node "vm", job 8, step 0.
const env_map srun_none{{"SLURM_PROCID", "1"},        {"SLURM_NTASKS", "2"},
                        {"SLURM_LOCALID", "1"},       {"SLURM_JOB_ID", "8"},
                        {"SLURM_STEP_ID", "0"},       {"SLURM_STEP_NODELIST", "vm"},
                        {"SLURM_JOB_NODELIST", "vm"}, {"SLURMD_NODENAME", "vm"}};

env_map with(env_map env, const env_map& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

const env_map pmix{{"PMIX_NAMESPACE", "slurm.pmix.9.0"},
                   {"PMIX_RANK", "1"},
                   {"PMIX_SERVER_URI4", "pmix-server.1593;tcp4://127.0.0.1:45123"},
                   {"SLURM_MPI_TYPE", "pmix"}};
const env_map pmi2{
    {"PMI_FD", "13"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"SLURM_MPI_TYPE", "pmi2"}};

launch_info srun_rank(int rank) {
  launch_info l;
  l.launcher = launcher_kind::srun;
  l.rank = rank;
  l.size = 2;
  return l;
}

std::string mpi_loads() {
  return "";
}
std::string mpi_missing() {
  return "/x/libpinbench_mpi.so: cannot open shared object file";
}

}  // namespace

TEST_CASE("slurm: the first host of a hostlist", "[dist][slurm]") {
  CHECK(slurm::first_host("vm") == "vm");
  CHECK(slurm::first_host("node[01-04,07],gpu5") == "node01");
  CHECK(slurm::first_host("node[07,01-04]") == "node07");  // the list's order, as Slurm keeps it
  CHECK(slurm::first_host("gpu5,node[01-04]") == "gpu5");
  CHECK(slurm::first_host("rack[2-3]-n[7,9]") == "rack2-n7");
  CHECK(slurm::first_host("a-[009-010]") == "a-009");
  CHECK_FALSE(slurm::first_host(""));
  CHECK_FALSE(slurm::first_host("node[01-04"));
  CHECK_FALSE(slurm::first_host("node[]"));
  CHECK_FALSE(slurm::first_host(",node1"));
}

TEST_CASE("slurm: tasks on a node from a per-node count", "[dist][slurm]") {
  CHECK(slurm::tasks_on_node("2(x3),1", 0) == 2);
  CHECK(slurm::tasks_on_node("2(x3),1", 2) == 2);
  CHECK(slurm::tasks_on_node("2(x3),1", 3) == 1);
  CHECK_FALSE(slurm::tasks_on_node("2(x3),1", 4));
  CHECK_FALSE(slurm::tasks_on_node("2(x3,1", 0));
  CHECK_FALSE(slurm::tasks_on_node("0", 0));
}

TEST_CASE("slurm: which PMI the step offers", "[dist][slurm]") {
  using kind = slurm::pmi_offer::kind;
  const environment none(from(srun_none));
  CHECK(slurm::offered_pmi(none).offered == kind::none);
  CHECK_THAT(slurm::offered_pmi(none).evidence, Contains("--mpi=none"));
  const auto with_pmix = with(srun_none, pmix);
  const auto offer = slurm::offered_pmi(environment(from(with_pmix)));
  CHECK(offer.offered == kind::pmix);
  CHECK(offer.evidence == "PMIX_NAMESPACE=slurm.pmix.9.0, SLURM_MPI_TYPE=pmix");
  const auto with_pmi2 = with(srun_none, pmi2);
  CHECK(slurm::offered_pmi(environment(from(with_pmi2))).offered == kind::pmi2);
  // A namespace without its server (a PMIx variable left over from an outer launcher) is not
  // an offer.
  const auto stale = with(srun_none, {{"PMIX_NAMESPACE", "x"}, {"PMIX_RANK", "0"}});
  CHECK(slurm::offered_pmi(environment(from(stale))).offered == kind::none);
}

TEST_CASE("slurm: a step's port is derived from its job and step ids", "[dist][slurm]") {
  CHECK(slurm::derived_port(8, 0) == 20808);
  CHECK(slurm::derived_port(10, 0) == 21010);
  // Every port is in [base, base + span); consecutive jobs and steps get different ones.
  for (std::uint64_t job : {0ULL, 1ULL, 99ULL, 4294967295ULL, 67108863ULL}) {
    for (std::uint64_t step : {0ULL, 1ULL, 4294967294ULL}) {
      const int port = slurm::derived_port(job, step);
      CHECK(port >= slurm::rendezvous_port_base);
      CHECK(port < slurm::rendezvous_port_base + slurm::rendezvous_port_span);
    }
  }
  CHECK(slurm::derived_port(1234, 0) != slurm::derived_port(1235, 0));
  CHECK(slurm::derived_port(1234, 0) != slurm::derived_port(1234, 1));
}

TEST_CASE("slurm: the rendezvous of a step and what it needs", "[dist][slurm]") {
  const auto at = slurm::step_rendezvous(environment(from(srun_none)));
  CHECK(at.host == "vm");
  CHECK(at.port == 20808);
  CHECK(at.from == "the first node of SLURM_STEP_NODELIST, the port of job 8 step 0");

  auto env =
      with(srun_none, {{"SLURM_STEP_NODELIST", "gpu[3-4]"}, {"PINBENCH_RENDEZVOUS_PORT", "4242"}});
  const auto overridden = slurm::step_rendezvous(environment(from(env)));
  CHECK(overridden.host == "gpu3");
  CHECK(overridden.port == 4242);

  auto older = srun_none;
  older.erase("SLURM_STEP_NODELIST");
  older.erase("SLURM_JOB_ID");
  older.erase("SLURM_STEP_ID");
  older["SLURM_JOBID"] = "8";
  older["SLURM_STEPID"] = "0";
  CHECK(slurm::step_rendezvous(environment(from(older))).port == 20808);

  auto failure = [](const env_map& e) -> std::string {
    try {
      (void)slurm::step_rendezvous(environment(from(e)));
    } catch (const std::exception& x) {
      return x.what();
    }
    return "(no error)";
  };
  auto no_list = srun_none;
  no_list.erase("SLURM_STEP_NODELIST");
  no_list.erase("SLURM_JOB_NODELIST");
  CHECK_THROWS_AS(slurm::step_rendezvous(environment(from(no_list))), pinbench::environment_error);
  CHECK_THAT(failure(no_list), Contains("PINBENCH_RENDEZVOUS=host:port"));
  CHECK_THROWS_AS(slurm::step_rendezvous(
                      environment(from(with(srun_none, {{"SLURM_STEP_NODELIST", "node[1-"}})))),
                  pinbench::input_error);
  CHECK_THAT(failure(with(srun_none, {{"SLURM_STEP_NODELIST", "node[1-"}})),
             Contains("environment SLURM_STEP_NODELIST: expected a Slurm hostlist"));
  CHECK_THAT(failure(with(srun_none, {{"PINBENCH_RENDEZVOUS_PORT", "70000"}})),
             Contains("environment PINBENCH_RENDEZVOUS_PORT: expected a port in [1, 65535]"));
  CHECK_THAT(failure(with(srun_none, {{"SLURM_JOB_ID", "8x"}})),
             Contains("environment SLURM_JOB_ID: expected a Slurm id"));
  auto no_job = srun_none;
  no_job.erase("SLURM_JOB_ID");
  CHECK_THAT(failure(no_job), Contains("needs SLURM_JOB_ID"));
  // With the port given, the ids only make the launch's token.
  CHECK(slurm::step_rendezvous(
            environment(from(with(no_job, {{"PINBENCH_RENDEZVOUS_PORT", "4242"}}))))
            .token == 0);
  CHECK(at.token == slurm::launch_token(8, 0));
  CHECK(slurm::launch_token(8, 0) != slurm::launch_token(8, 1));
}

TEST_CASE("transport: srun uses MPI only where the step offers PMIx and MPI loads",
          "[dist][slurm]") {
  SECTION("--mpi=none: tcp on the step's first node") {
    const auto c = choose_transport(srun_rank(1), from(srun_none), mpi_loads);
    CHECK(c.transport == transport_kind::tcp);
    CHECK(c.host == "vm");
    CHECK(c.port == 20808);
    CHECK(c.launch_token == slurm::launch_token(8, 0));
    CHECK(c.address_from == "the first node of SLURM_STEP_NODELIST, the port of job 8 step 0");
    CHECK_THAT(c.why, Contains("offers no PMI"));
    CHECK_THAT(c.why, Contains("job 8 step 0"));
  }
  SECTION("--mpi=pmix with MPI support: mpi") {
    const auto env = with(srun_none, pmix);
    const auto c = choose_transport(srun_rank(1), from(env), mpi_loads);
    CHECK(c.transport == transport_kind::mpi);
    CHECK_THAT(c.why, Contains("offers PMIx (PMIX_NAMESPACE=slurm.pmix.9.0"));
  }
  SECTION("--mpi=pmix without MPI support: refused, never tcp on some ranks only") {
    const auto env = with(srun_none, pmix);
    CHECK_THROWS_AS(choose_transport(srun_rank(1), from(env), mpi_missing),
                    pinbench::environment_error);
    CHECK_THROWS_WITH(choose_transport(srun_rank(1), from(env), mpi_missing),
                      Contains("MPI support cannot be loaded here: /x/libpinbench_mpi.so") &&
                          Contains("PINBENCH_TRANSPORT=tcp"));
    const auto tcp = with(env, {{"PINBENCH_TRANSPORT", "tcp"}});
    CHECK(choose_transport(srun_rank(1), from(tcp), mpi_missing).transport == transport_kind::tcp);
  }
  SECTION("--mpi=pmi2: tcp, unless PINBENCH_TRANSPORT=mpi") {
    const auto env = with(srun_none, pmi2);
    const auto c = choose_transport(srun_rank(1), from(env), mpi_loads);
    CHECK(c.transport == transport_kind::tcp);
    CHECK_THAT(c.why, Contains("PMI-2 only (PMI_FD=13, SLURM_MPI_TYPE=pmi2)"));
    const auto forced = with(env, {{"PINBENCH_TRANSPORT", "mpi"}});
    CHECK(choose_transport(srun_rank(1), from(forced), mpi_loads).transport == transport_kind::mpi);
  }
  SECTION("PINBENCH_TRANSPORT=tcp and PINBENCH_RENDEZVOUS win over PMIx") {
    const auto tcp = with(srun_none, with(pmix, {{"PINBENCH_TRANSPORT", "tcp"}}));
    CHECK(choose_transport(srun_rank(1), from(tcp), mpi_loads).port == 20808);
    const auto at = with(srun_none, with(pmix, {{"PINBENCH_RENDEZVOUS", "10.0.0.5:9000"}}));
    const auto c = choose_transport(srun_rank(1), from(at), mpi_loads);
    CHECK(c.transport == transport_kind::tcp);
    CHECK(c.host == "10.0.0.5");
    CHECK(c.port == 9000);
  }
  SECTION("rank 0 elsewhere than the step's first node is named, not waited for") {
    const auto env = with(
        srun_none,
        {{"SLURM_PROCID", "0"}, {"SLURMD_NODENAME", "gpu7"}, {"SLURM_STEP_NODELIST", "gpu[3,7]"}});
    CHECK_THROWS_AS(choose_transport(srun_rank(0), from(env), mpi_loads),
                    pinbench::environment_error);
    CHECK_THROWS_WITH(choose_transport(srun_rank(0), from(env), mpi_loads),
                      Contains("rank 0 runs on gpu7 (SLURMD_NODENAME), not on gpu3"));
    // The other ranks may run anywhere.
    CHECK(choose_transport(srun_rank(1), from(env), mpi_loads).host == "gpu3");
  }
}

TEST_CASE("transport: the other launchers, and a malformed PINBENCH_TRANSPORT", "[dist]") {
  launch_info l;
  l.size = 2;
  l.launcher = launcher_kind::mpirun;
  const env_map nothing;
  CHECK(choose_transport(l, from(nothing), mpi_loads).transport == transport_kind::mpi);
  const env_map tcp{{"PINBENCH_TRANSPORT", "tcp"}};
  CHECK_THROWS_WITH(choose_transport(l, from(tcp), mpi_loads),
                    Contains("needs PINBENCH_RENDEZVOUS"));
  const env_map bad{{"PINBENCH_TRANSPORT", "nccl"}};
  CHECK_THROWS_AS(choose_transport(l, from(bad), mpi_loads), pinbench::input_error);
  CHECK_THROWS_WITH(choose_transport(l, from(bad), mpi_loads),
                    Contains("environment PINBENCH_TRANSPORT: expected auto, mpi or tcp"));
  l.launcher = launcher_kind::torchrun;
  const env_map torch{{"MASTER_ADDR", "10.1.1.1"}, {"MASTER_PORT", "29500"}};
  const auto c = choose_transport(l, from(torch), mpi_loads);
  CHECK(c.transport == transport_kind::tcp);
  CHECK(c.host == "10.1.1.1");
  CHECK(c.port == 29501);
  l.size = 1;
  CHECK(choose_transport(l, from(bad), mpi_loads).transport == transport_kind::single);
}
