// The allocator kind through the pinbench executable: load-time errors, --snapshot, list.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using pinbench::testing::fresh_dir;
using pinbench::testing::run_pinbench;

namespace {

const char* k_fast_allocator =
    " --backend host --quiet --set sampling.min_samples=1 --set sampling.max_samples=1"
    " --set iterations=3";

}  // namespace

TEST_CASE("bad allocator params stop the run before anything is measured", "[app][allocator]") {
  const fs::path dir = fresh_dir("bad");
  const std::string out = (dir / "r.json").string();
  struct bad {
    std::string args, expect;
  };
  const std::vector<bad> cases{
      {"--set config=max_split_size_mb:5", "--set config=max_split_size_mb:5: max_split_size_mb"},
      {"--set config=expandable_segment:True", "did you mean"},
      {"--set batch_sizes=32,0", "item [1]"},
      {"--set allocator=cuda_malloc", "expected one of"},
      {"--set workload=trace", "params.trace_file"},
      {"--snapshot -", "--snapshot"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto o = run_pinbench("run builtin:allocator-caching-vs-raw --backend host --out " + out +
                                " " + c.args);
    CHECK(o.code == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK(o.err.find(c.expect) != std::string::npos);
    CHECK(o.out.empty());
    CHECK_FALSE(fs::exists(out));
  }
  fs::remove_all(dir);
}

TEST_CASE("validate refuses a trace_file that run could not replay, as run does",
          "[app][allocator]") {
  const fs::path dir = fresh_dir("trace-file");
  fs::create_directories(dir / "traces");
  ::mkfifo((dir / "fifo.json").c_str(), 0600);
  const auto scenario_with =
      [&](const std::string& trace) {
        std::ofstream(dir / "s.json")
            << R"({"schema": "pinbench.scenario/1", "name": "replay", "kind": "allocator", )"
            << R"("params": {"workload": "trace", "trace_file": ")" << trace << R"("}})";
        return (dir / "s.json").string();
      };
  struct bad {
    std::string trace, why;
  };
  for (const auto& b : std::vector<bad>{{"traces", "is a directory"},
                                        {"/dev/zero", "is a character device"},
                                        {"fifo.json", "is a FIFO"},
                                        {"missing.json", "No such file or directory"}}) {
    INFO(b.trace);
    for (const std::string cmd : {"validate ", "run --backend host --out - "}) {
      INFO(cmd);
      const auto o = run_pinbench(cmd + scenario_with(b.trace));
      CHECK(o.code == 2);
      CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
      CHECK(o.err.find((dir / "s.json").string() + ": params.trace_file: ") != std::string::npos);
      CHECK(o.err.find(b.why) != std::string::npos);
      CHECK(o.out.empty());
    }
  }
  std::ofstream(dir / "traces" / "t.json") << R"({"schema": "pinbench.trace/1", "events": []})";
  const auto o = run_pinbench("validate " + scenario_with("traces/t.json"));
  CHECK(o.code == 0);
  fs::remove_all(dir);
}

TEST_CASE("run --snapshot writes one snapshot per allocator case", "[app][allocator]") {
  const fs::path dir = fresh_dir("snap");
  const std::string snap = (dir / "snap.json").string();
  const std::string out = (dir / "r.json").string();
  const auto o = run_pinbench("run builtin:allocator-caching-vs-raw --out " + out + " --snapshot " +
                              snap + k_fast_allocator);
  REQUIRE(o.code == 0);
  std::ifstream in(snap);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["schema"] == "pinbench.snapshots/1");
  REQUIRE(j["cases"].size() == 2);
  CHECK(j["cases"][0]["scenario"] == "allocator-caching-vs-raw");
  CHECK(j["cases"][0]["case"] == "allocator=caching");
  CHECK(j["cases"][1]["case"] == "allocator=raw");
  // Taken at the end, as _dump_snapshot() is: the caching allocator still holds its cache, the
  // raw one gave everything back; both traces hold the whole run.
  CHECK_FALSE(j["cases"][0]["snapshot"]["segments"].empty());
  CHECK(j["cases"][1]["snapshot"]["segments"].empty());
  for (const auto& c : j["cases"]) {
    REQUIRE(c["snapshot"]["device_traces"].size() == 1);
    CHECK_FALSE(c["snapshot"]["device_traces"][0].empty());
    CHECK(c["snapshot"]["device_traces"][0][0]["action"] == "segment_alloc");
  }
  // The snapshot stays out of the result file, which has the counters and the summary.
  std::ifstream rin(out);
  const auto r = nlohmann::json::parse(rin);
  const auto& raw = r["scenarios"][0]["cases"][1];
  CHECK_FALSE(raw.contains("snapshot"));
  CHECK(raw["metrics"].contains("num_device_alloc"));
  CHECK(raw["info"]["memory_summary"].get<std::string>().find("pinbench memory summary") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("list shows the allocator kind and its scenarios", "[app][allocator]") {
  auto o = run_pinbench("list --params");
  CHECK(o.code == 0);
  CHECK(o.out.find("kind allocator") != std::string::npos);
  CHECK(o.out.find("batch_sizes") != std::string::npos);
  CHECK(o.out.find("integer list") != std::string::npos);
  o = run_pinbench("list");
  CHECK(o.code == 0);
  for (const char* name : {"allocator-caching-vs-raw", "allocator-empty-cache",
                           "allocator-fragmentation", "allocator-hot-path"})
    CHECK(o.out.find(std::string("builtin:") + name) != std::string::npos);
}

TEST_CASE(
    "run --snapshot FILE.pickle writes the replay as PyTorch pickles a snapshot, which "
    "replays to PyTorch's decisions again",
    "[app][allocator][recording]") {
  const fs::path dir = fresh_dir("snap-pickle");
  const std::string fixture =
      pinbench::testing::source_dir() + "/tests/data/traces/snapshot-start-state.pickle";
  const fs::path scenario = dir / "s.json";
  std::ofstream(scenario)
      << pinbench::testing::trace_replay_scenario("replay", fixture, "snapshot", "8GiB").dump();
  const std::string pickle = (dir / "replay.pickle").string();
  const std::string out = (dir / "r.json").string();
  const auto o = run_pinbench("run " + scenario.string() + " --backend host --quiet --snapshot " +
                              pickle + " --out " + out);
  INFO(o.err);
  REQUIRE(o.code == 0);
  // The table says how the replay checked itself.
  CHECK(o.out.find("against PyTorch: default: PyTorch's 2 cudaMalloc/cudaFree decisions "
                   "reproduced exactly") != std::string::npos);
  std::ifstream rin(out);
  const auto r = nlohmann::json::parse(rin);
  const auto& d = r["scenarios"][0]["cases"][0]["info"]["pytorch_decisions"];
  CHECK(d["reproduced"] == true);
  CHECK(d["identical"] == 2);
  CHECK(d["start_state"]["segments"] == 2);

  // The pickle read back: its own trace, replayed under its own settings, makes the same
  // decisions; it starts where the fixture started (the start state is its segments, not
  // trace entries).
  {
    std::ifstream in(pickle, std::ios::binary);
    CHECK(in.get() == 0x80);
  }
  const fs::path again = dir / "again.json";
  std::ofstream(again)
      << pinbench::testing::trace_replay_scenario("again", pickle, "snapshot", "8GiB").dump();
  const std::string out2 = (dir / "r2.json").string();
  const auto o2 = run_pinbench("run " + again.string() + " --backend host --quiet --out " + out2);
  INFO(o2.err);
  REQUIRE(o2.code == 0);
  std::ifstream r2in(out2);
  const auto r2 = nlohmann::json::parse(r2in);
  const auto& d2 = r2["scenarios"][0]["cases"][0]["info"]["pytorch_decisions"];
  CHECK(d2["reproduced"] == true);
  CHECK(d2["pytorch"] == 2);
  CHECK(d2["start_state"]["segments"] == 2);

  // A pickle holds one case: a run of two is refused before anything runs.
  const auto two = run_pinbench("run builtin:allocator-caching-vs-raw --snapshot " +
                                (dir / "two.pickle").string() + k_fast_allocator);
  CHECK(two.code == 2);
  CHECK(two.err.find("is a pickle, which holds one case's snapshot") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "two.pickle"));
  fs::remove_all(dir);
}

TEST_CASE("the pytorch param picks a release's rules, checked when the scenario loads",
          "[app][allocator][pytorch]") {
  const auto bad = run_pinbench("validate builtin:allocator-caching-vs-raw --set pytorch=1.13");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("pytorch=1.13: expected a PyTorch release of 2.0 or later") !=
        std::string::npos);
  // A key of a later release is refused under an earlier one.
  const auto early = run_pinbench(
      "validate builtin:allocator-caching-vs-raw --set pytorch=2.5 "
      "--set config=max_non_split_rounding_mb:64");
  CHECK(early.code == 2);
  CHECK(early.err.find("is not an option of PyTorch 2.5 (it came in 2.6)") != std::string::npos);
  const auto ok = run_pinbench(
      "validate builtin:allocator-caching-vs-raw --set pytorch=2.6 "
      "--set config=max_non_split_rounding_mb:64");
  CHECK(ok.code == 0);
}

TEST_CASE("the releases that reproduce a snapshot leave out those without its options",
          "[app][allocator][recording]") {
  const fs::path dir = fresh_dir("snap-releases");
  const fs::path scenario = dir / "s.json";
  std::ofstream(scenario) << pinbench::testing::trace_replay_scenario(
                                 "replay",
                                 pinbench::testing::source_dir() +
                                     "/tests/data/traces/snapshot-expandable.pickle",
                                 "snapshot", "80GiB")
                                 .dump();
  const std::string out = (dir / "r.json").string();
  const auto o = run_pinbench("run " + scenario.string() + " --backend host --quiet --out " + out);
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto r = nlohmann::json::parse(in);
  const auto& d = r["scenarios"][0]["cases"][0]["info"]["pytorch_decisions"];
  CHECK(d["reproduced"] == true);
  // expandable_segments came in 2.1: 2.0's rules are not tried.
  CHECK(d["releases_reproducing"] ==
        nlohmann::json::array({"2.1-2.3", "2.4-2.5", "2.6-2.9", "2.10 and later"}));
  // Asked for by name, 2.0 cannot replay the snapshot's settings: the case fails and says why.
  const auto old = run_pinbench("run " + scenario.string() +
                                " --backend host --quiet --set pytorch=2.0 --out " + out);
  CHECK(old.code == 1);
  std::ifstream in2(out);
  const auto r2 = nlohmann::json::parse(in2);
  CHECK(r2["scenarios"][0]["cases"][0]["message"].get<std::string>().find(
            "expandable_segments came in PyTorch 2.1") != std::string::npos);
  fs::remove_all(dir);
}
