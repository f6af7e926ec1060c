#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/error.hpp"
#include "dist/launch.hpp"
#include "support.hpp"

using pinbench::input_error;
using pinbench::dist::detect_launch;
using pinbench::dist::launch_info;

namespace {

using pinbench::testing::env_map;

launch_info detect(const env_map& env) {
  return detect_launch(pinbench::testing::getenv_of(env));
}

// The one-line message of the input_error a malformed environment gives.
std::string failure(const env_map& env) {
  try {
    (void)detect(env);
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

const env_map mpirun{{"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
const env_map srun{{"SLURM_PROCID", "3"},          {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                   {"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}};
const env_map torchrun{
    {"RANK", "2"}, {"WORLD_SIZE", "3"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}};

env_map merged(env_map a, const env_map& b) {
  a.insert(b.begin(), b.end());
  return a;
}

env_map with(env_map env, const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

env_map without(env_map env, const std::string& name) {
  env.erase(name);
  return env;
}

}  // namespace

TEST_CASE("no launcher: one process", "[dist][launch]") {
  auto info = detect({});
  CHECK(info.launcher == pinbench::dist::launcher_kind::none);
  CHECK(info.rank == 0);
  CHECK(info.size == 1);
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 1);
  CHECK_FALSE(info.launched());
  // An allocation's SLURM_NTASKS without SLURM_PROCID is not a launch; empty values are unset.
  CHECK_FALSE(detect({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "7"}}).launched());
  // A batch script (sbatch -n 2) has SLURM_PROCID=0 and SLURM_NTASKS=2 but no step: it is one
  // process, which srun may start many of (the variables of Slurm 22.05's batch step).
  CHECK_FALSE(detect({{"SLURM_PROCID", "0"},
                      {"SLURM_NTASKS", "2"},
                      {"SLURM_NPROCS", "2"},
                      {"SLURM_LOCALID", "0"},
                      {"SLURM_JOB_ID", "7"},
                      {"SLURM_NODELIST", "vm"}})
                  .launched());
  // salloc's interactive step, and the batch and extern steps, have reserved step ids.
  for (const char* reserved : {"4294967290", "4294967291", "4294967292"}) {
    CHECK_FALSE(detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_STEP_ID", reserved}})
                    .launched());
  }
  CHECK_FALSE(detect({{"RANK", ""}, {"WORLD_SIZE", ""}}).launched());
}

TEST_CASE("each launcher's variables", "[dist][launch]") {
  SECTION("mpirun") {
    auto info = detect(mpirun);
    CHECK(info.launcher == pinbench::dist::launcher_kind::mpirun);
    CHECK(info.rank == 1);
    CHECK(info.size == 4);
    CHECK(info.local_rank == 1);
    CHECK(info.local_size == 2);
    CHECK(info.launched());
  }
  SECTION("mpirun with PMIX_RANK for the rank") {
    auto info = detect({{"PMIX_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}});
    CHECK(info.launcher == pinbench::dist::launcher_kind::mpirun);
    CHECK(info.rank == 2);
    CHECK(info.size == 3);
    CHECK(info.local_rank == 0);
    CHECK(info.local_size == 1);
  }
  SECTION("srun") {
    auto info = detect(srun);
    CHECK(info.launcher == pinbench::dist::launcher_kind::srun);
    CHECK(info.rank == 3);
    CHECK(info.size == 8);
    CHECK(info.local_rank == 1);
    CHECK(info.local_size == 4);
  }
  SECTION("srun: local size from SLURM_STEP_TASKS_PER_NODE and SLURM_NODEID") {
    auto env = without(srun, "SLURM_NTASKS_PER_NODE");
    env = merged(env, {{"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "1"}});
    CHECK(detect(env).local_size == 2);
    CHECK(detect(with(with(env, "SLURM_NODEID", "3"), "SLURM_LOCALID", "0")).local_size == 1);
  }
  SECTION("srun: without a per-node count, the least SLURM_LOCALID implies") {
    auto env = with(without(srun, "SLURM_NTASKS_PER_NODE"), "SLURM_LOCALID", "2");
    CHECK(detect(env).local_size == 3);
    CHECK(detect(with(srun, "SLURM_NTASKS_PER_NODE", "2,1")).local_size == 2);
  }
  SECTION("srun: the step's own task count and layout before the job's") {
    // srun -n 2 inside an -n 4 --ntasks-per-node=4 job, with --preserve-env.
    auto env = merged(
        with(srun, "SLURM_PROCID", "1"),
        {{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}, {"SLURM_NODEID", "0"}});
    auto info = detect(env);
    CHECK(info.size == 2);
    CHECK(info.local_size == 2);
  }
  SECTION("srun: SLURM_NPROCS for an older Slurm") {
    auto info = detect({{"SLURM_PROCID", "0"}, {"SLURM_NPROCS", "2"}, {"SLURM_STEPID", "1"}});
    CHECK(info.size == 2);
    CHECK(info.local_size == 1);
  }
  SECTION("torchrun") {
    auto info = detect(torchrun);
    CHECK(info.launcher == pinbench::dist::launcher_kind::torchrun);
    CHECK(info.rank == 2);
    CHECK(info.size == 3);
    CHECK(info.local_rank == 0);
    CHECK(info.local_size == 1);
  }
  SECTION("a launch of one is still a launch") {
    auto info = detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
    CHECK(info.size == 1);
    CHECK(info.launched());
  }
}

TEST_CASE("mpirun's variables win, then srun's, then torchrun's", "[dist][launch]") {
  CHECK(detect(merged(merged(mpirun, srun), torchrun)).launcher ==
        pinbench::dist::launcher_kind::mpirun);
  CHECK(detect(merged(srun, torchrun)).launcher == pinbench::dist::launcher_kind::srun);
  CHECK(detect(merged(mpirun, torchrun)).rank == 1);
  // The winner's variables alone are read: a malformed loser is not an error.
  CHECK(detect(merged(mpirun, {{"RANK", "x"}})).launcher == pinbench::dist::launcher_kind::mpirun);
  CHECK(detect(merged(torchrun, {{"SLURM_NTASKS", "8"}})).launcher ==
        pinbench::dist::launcher_kind::torchrun);
}

TEST_CASE("a malformed environment is an input error naming the variable", "[dist][launch]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_RANK", "one")),
             Contains("environment OMPI_COMM_WORLD_RANK: expected an integer, got \"one\""));
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_SIZE", "4 ")),
             Contains("OMPI_COMM_WORLD_SIZE") && Contains("\"4 \""));
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_RANK", "4")),
             Contains("OMPI_COMM_WORLD_RANK: expected a rank in [0, 4), got \"4\""));
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_RANK", "-1")),
             Contains("OMPI_COMM_WORLD_RANK") && Contains("\"-1\""));
  CHECK_THAT(failure(with(with(mpirun, "OMPI_COMM_WORLD_SIZE", "0"), "OMPI_COMM_WORLD_RANK", "0")),
             Contains("OMPI_COMM_WORLD_SIZE: expected a size of at least 1, got \"0\""));
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_SIZE", "99999999999")),
             Contains("OMPI_COMM_WORLD_SIZE") && Contains("99999999999"));
  CHECK_THAT(failure(without(mpirun, "OMPI_COMM_WORLD_SIZE")),
             Contains("OMPI_COMM_WORLD_SIZE: not set, but OMPI_COMM_WORLD_RANK is"));
  CHECK_THAT(failure(without(mpirun, "OMPI_COMM_WORLD_RANK")),
             Contains("OMPI_COMM_WORLD_RANK: not set, but OMPI_COMM_WORLD_SIZE is"));
  CHECK_THAT(failure(without(mpirun, "OMPI_COMM_WORLD_LOCAL_SIZE")),
             Contains("OMPI_COMM_WORLD_LOCAL_SIZE: not set"));
  CHECK_THAT(failure(with(mpirun, "OMPI_COMM_WORLD_LOCAL_RANK", "2")),
             Contains("OMPI_COMM_WORLD_LOCAL_RANK: expected a rank in [0, 2)"));
  CHECK_THAT(failure(with(mpirun, "PMIX_RANK", "x")), Contains("(no error)"));  // not read

  CHECK_THAT(failure(with(srun, "SLURM_PROCID", "3.0")), Contains("environment SLURM_PROCID"));
  CHECK_THAT(failure(without(srun, "SLURM_NTASKS")),
             Contains("SLURM_NTASKS: not set, but SLURM_PROCID is"));
  CHECK_THAT(failure(with(srun, "SLURM_PROCID", "8")),
             Contains("SLURM_PROCID: expected a rank in [0, 8), got \"8\""));
  CHECK_THAT(failure(with(srun, "SLURM_LOCALID", "abc")),
             Contains("SLURM_LOCALID: expected an integer, got \"abc\""));
  CHECK_THAT(failure(with(srun, "SLURM_LOCALID", "4")),
             Contains("SLURM_LOCALID: expected a local rank in [0, 4)"));
  CHECK_THAT(failure(with(srun, "SLURM_LOCALID", "-2")), Contains("SLURM_LOCALID"));

  CHECK_THAT(failure(with(torchrun, "RANK", "")), Contains("RANK: not set, but WORLD_SIZE is"));
  CHECK_THAT(failure(without(torchrun, "RANK")), Contains("RANK: not set, but WORLD_SIZE is"));
  CHECK_THAT(failure(without(torchrun, "WORLD_SIZE")),
             Contains("WORLD_SIZE: not set, but RANK is"));
  CHECK_THAT(failure(with(torchrun, "WORLD_SIZE", "0x3")),
             Contains("environment WORLD_SIZE: expected an integer, got \"0x3\""));
  CHECK_THAT(failure(with(torchrun, "RANK", "3")), Contains("RANK: expected a rank in [0, 3)"));
  CHECK_THAT(failure(without(torchrun, "LOCAL_RANK")),
             Contains("LOCAL_RANK: not set, but LOCAL_WORLD_SIZE is"));
  CHECK_THAT(failure(with(torchrun, "LOCAL_WORLD_SIZE", "-1")),
             Contains("LOCAL_WORLD_SIZE: expected a size of at least 1, got \"-1\""));
}

TEST_CASE("the process environment by default", "[dist][launch]") {
  // Whatever launched the tests, detect_launch with no argument reads the real environment and
  // agrees with itself.
  auto a = detect_launch();
  auto b = detect_launch({});
  CHECK(a.launcher == b.launcher);
  CHECK(a.rank == b.rank);
}
