// `run --numa` through the pinbench executable: every transfer and loader case records where
// its host buffers were meant to go and whether that held (this container may refuse the
// placement: the record must then say so, not fail), the choice reaches each round's process,
// and a node the machine lacks is bad input.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using pinbench::testing::fresh_dir;
using pinbench::testing::run_pinbench;

const std::string numa_quick_sampling =
    R"({"warmup": 0, "min_samples": 2, "max_samples": 3, "min_time": "0", "timeout": "2s"})";

void write_numa_scenarios(const fs::path& dir) {
  std::ofstream(dir / "transfer.json")
      << R"({"schema": "pinbench.scenario/1", "name": "numa-transfer", "kind": "transfer",
            "params": {"bytes": "64KiB"},
            "matrix": {"memory": ["pageable", "pinned"], "direction": ["h2d", "d2h"]},
            "sampling": )" +
             numa_quick_sampling + "}";
  std::ofstream(dir / "loader.json")
      << R"({"schema": "pinbench.scenario/1", "name": "numa-loader", "kind": "loader",
            "params": {"dataset": {"samples": 64, "sample_bytes": "1KiB", "cpu_per_sample": "1us"},
                       "batch_size": 8, "compute_per_batch": "100us"},
            "sampling": )" +
             numa_quick_sampling + "}";
}

json read_numa_result(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// The record is complete and agrees with itself, whether or not placement succeeded here.
void check_numa_record(const json& numa, const std::string& requested) {
  INFO(numa.dump());
  REQUIRE(numa.is_object());
  for (const char* key : {"node", "cpus", "placed", "reason", "requested"})
    CHECK(numa.contains(key));
  CHECK(numa["requested"] == requested);
  CHECK(numa["cpus"].is_string());
  CHECK_FALSE(numa["reason"].get<std::string>().empty());
  if (numa["placed"].get<bool>()) {
    REQUIRE(numa["node"].is_number_integer());
    // Transfer cases observe their host buffer, loader cases (memory source) their dataset.
    REQUIRE(numa.contains("buffer_node"));
    CHECK(numa["buffer_node"] == numa["node"]);
  }
  if (numa["node"].is_null()) CHECK(numa["placed"] == false);
}

}  // namespace

TEST_CASE("numa cli: every transfer and loader case records its NUMA placement", "[numa][cli]") {
  const auto dir = fresh_dir("numa-cli");
  write_numa_scenarios(dir);
  const auto out = dir / "r.json";
  const auto o = run_pinbench("run " + dir.string() + " --backend host -q --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const json r = read_numa_result(out);
  std::size_t cases = 0;
  for (const auto& s : r["scenarios"])
    for (const auto& c : s["cases"]) {
      INFO(c["id"]);
      check_numa_record(c["info"]["numa"], "auto");
      ++cases;
    }
  CHECK(cases == 5);
}

TEST_CASE("numa cli: --numa none reaches each round's process", "[numa][cli]") {
  const auto dir = fresh_dir("numa-cli-none");
  write_numa_scenarios(dir);
  fs::remove(dir / "loader.json");
  const auto out = dir / "r.json";
  const auto o = run_pinbench("run " + dir.string() +
                              " --backend host -q --numa none --repeat 2 --out " + out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const json result = read_numa_result(out);  // kept: the loop walks a part of it
  for (const auto& c : result["scenarios"][0]["cases"]) {
    const json& numa = c["info"]["numa"];
    check_numa_record(numa, "none");
    CHECK(numa["node"].is_null());
    CHECK(numa["placed"] == false);
  }
}

TEST_CASE("numa cli: a node this machine lacks, or no node at all, is bad input", "[numa][cli]") {
  for (const char* bad : {"4095", "nearest", "-1"}) {
    INFO(bad);
    const auto o =
        run_pinbench(std::string("run builtin:transfer-size --backend host --numa ") + bad);
    CHECK(o.code == 2);
    CHECK(o.err.find("--numa") != std::string::npos);
  }
  const auto o = run_pinbench("run builtin:transfer-size --backend host --numa 4095");
  CHECK(o.err.find("not a NUMA node of this machine") != std::string::npos);
}
