// A run's inputs are expanded once: each scenario once per `run` and per `validate` (also on each
// rank of a launch), and a user's image folder read by many cases listed once.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_in_process.hpp"
#include "collective/thread_world.hpp"
#include "device/platform.hpp"
#include "image/image_set.hpp"
#include "run/execute.hpp"
#include "run/plan.hpp"
#include "scenario/scenario.hpp"
#include "scratch_dir.hpp"
#include "test_paths.hpp"

namespace pinbench {
namespace {

namespace fs = std::filesystem;

// Two small transfer scenarios: 3 cases and 2 cases, each measured in a moment.
void write_two_scenarios(const fs::path& dir) {
  const std::string sampling =
      R"("sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1, "min_time": "0"})";
  std::ofstream(dir / "a.json") << R"({"schema": "pinbench.scenario/1", "name": "a",
    "kind": "transfer", "params": {"bytes": "4KiB"},
    "matrix": {"memory": ["pageable", "pinned", "registered"]}, )"
                                << sampling << "}";
  std::ofstream(dir / "b.json") << R"({"schema": "pinbench.scenario/1", "name": "b",
    "kind": "transfer", "params": {"bytes": "4KiB"},
    "matrix": {"direction": ["h2d", "d2h"]}, )"
                                << sampling << "}";
}

// An ImageFolder of two classes, a copy of the reference JPEG in each, and a loader scenario
// whose three cases all read it.
fs::path write_image_folder_scenario(const fs::path& dir) {
  const fs::path jpeg = fs::path(testing::source_dir()) / "tests/data/jpeg/reference.jpg";
  for (const char* cls : {"cat", "dog"}) {
    fs::create_directories(dir / "images" / cls);
    fs::copy_file(jpeg, dir / "images" / cls / "one.jpg");
  }
  const fs::path scenario = dir / "loader.json";
  std::ofstream(scenario) << R"({"schema": "pinbench.scenario/1", "name": "folder",
    "kind": "loader",
    "params": {"dataset": {"source": "jpeg", "dir": ")"
                          << (dir / "images").string() << R"(",
                           "samples": 2, "crop": 16, "cpu_per_sample": "0us"},
               "batch_size": 1, "compute_per_batch": "0us"},
    "matrix": {"num_workers": [0, 1, 2]},
    "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1, "min_time": "0"}})";
  return scenario;
}

}  // namespace

TEST_CASE("run and validate expand each scenario once", "[run][plan]") {
  const testing::scratch_dir dir("plan-once");
  write_two_scenarios(dir.path());
  const std::string a = (dir.path() / "a.json").string(), b = (dir.path() / "b.json").string();

  std::uint64_t before = scenario::expansions();
  const auto ran = testing::run_cli_in_process(
      {"run", a, b, "--backend", "host", "-q", "--out", (dir.path() / "r.json").string()},
      dir.path());
  INFO(ran.err);
  REQUIRE(ran.code == 0);
  CHECK(scenario::expansions() - before == 2);

  before = scenario::expansions();
  const auto checked = testing::run_cli_in_process({"validate", a, b}, dir.path());
  REQUIRE(checked.code == 0);
  CHECK(scenario::expansions() - before == 2);

  // Rounds in one process measure the plan's cases again, without expanding them again.
  before = scenario::expansions();
  const auto rounds = testing::run_cli_in_process(
      {"run", a, "--backend", "host", "-q", "--repeat", "3", "--rounds-in", "one-process"},
      dir.path());
  REQUIRE(rounds.code == 0);
  CHECK(scenario::expansions() - before == 1);
}

TEST_CASE("a user's image folder read by many cases is listed once", "[run][plan][image]") {
  const testing::scratch_dir dir("plan-folder");
  const std::string scenario = write_image_folder_scenario(dir.path()).string();

  std::uint64_t before = image::image_folder_scans();
  const auto plan = run::make_plan({scenario}, {}, {});
  REQUIRE(plan.scenarios.at(0).cases.size() == 3);
  CHECK(image::image_folder_scans() - before == 1);

  before = image::image_folder_scans();
  const auto checked = testing::run_cli_in_process({"validate", scenario}, dir.path());
  INFO(checked.err);
  REQUIRE(checked.code == 0);
  CHECK(image::image_folder_scans() - before == 1);

  before = image::image_folder_scans();
  const auto ran =
      testing::run_cli_in_process({"run", scenario, "--backend", "host", "-q"}, dir.path());
  INFO(ran.err);
  REQUIRE(ran.code == 0);
  CHECK(image::image_folder_scans() - before == 1);
}

TEST_CASE("under a launch each rank expands each scenario once", "[run][plan][dist]") {
  const testing::scratch_dir dir("plan-launch");
  write_two_scenarios(dir.path());
  const std::vector<std::string> inputs{(dir.path() / "a.json").string(),
                                        (dir.path() / "b.json").string()};
  constexpr int ranks = 2;
  testing::thread_world world(ranks);
  const auto platform = device::platform::host();
  const std::uint64_t before = scenario::expansions();
  std::vector<run::outcome> outcomes(ranks);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        testing::thread_world::comm comm(world, r);
        run::plan_settings settings;
        settings.seed = 1;
        const run::plan plan = run::make_plan(inputs, {}, settings);
        run::execute_options x;
        x.platform = &platform;
        x.world = &comm;
        x.launch.rank = r;
        x.launch.size = ranks;
        x.first_meeting = std::chrono::seconds(60);
        x.platform_settings = {platform.name()};
        outcomes[static_cast<std::size_t>(r)] = run::execute(plan, x);
      });
  }
  CHECK(scenario::expansions() - before == 2 * ranks);
  const auto& merged = outcomes[0].result;
  CHECK(outcomes[0].writer);
  CHECK_FALSE(outcomes[1].writer);
  REQUIRE(merged.scenarios.size() == 2);
  CHECK(merged.scenarios[0].cases.size() == 3 * ranks);  // every rank's cases, rank by rank
  CHECK(merged.scenarios[1].cases.size() == 2 * ranks);
}

}  // namespace pinbench
