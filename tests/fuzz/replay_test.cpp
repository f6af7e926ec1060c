// Replays every fuzz seed (fuzz/seeds.txt) and every regression input (tests/data/fuzz/TARGET/)
// through the fuzz targets' own code: accepted or rejected with a one-line pinbench::error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/targets.hpp"
#include "support.hpp"
#include "test_paths.hpp"

using pinbench::testing::read_text;

namespace {

namespace fs = std::filesystem;
using pinbench::fuzz::all_targets;
using pinbench::fuzz::verdict;

const fs::path source_dir = pinbench::testing::source_dir();

std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    if (!extension.empty() && entry.path().extension() != extension) continue;
    if (entry.path().filename().string().starts_with(".")) continue;  // README.md and the like
    out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// fuzz/seeds.txt as the fuzz script reads it, plus the regressions: target -> input files.
std::map<std::string, std::vector<fs::path>> inputs_by_target() {
  std::map<std::string, std::vector<fs::path>> out;
  std::ifstream in(source_dir / "fuzz" / "seeds.txt");
  REQUIRE(in);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string target, pattern;
    if (!(words >> target >> pattern) || target.starts_with("#")) continue;
    const auto star = pattern.rfind("/*");
    REQUIRE(star != std::string::npos);
    const std::string extension = pattern.substr(star + 2);  // "" or ".json"
    for (auto& f : files_in(source_dir / pattern.substr(0, star), extension))
      out[target].push_back(std::move(f));
  }
  for (const auto& t : all_targets()) {
    for (auto& f : files_in(source_dir / "tests" / "data" / "fuzz" / std::string(t.name), ""))
      out[std::string(t.name)].push_back(std::move(f));
  }
  return out;
}

verdict replay(const pinbench::fuzz::target& t, const fs::path& file) {
  INFO("target " << t.name << ", input " << file.string());
  verdict v;
  // An oracle_violation names the bug; REQUIRE_NOTHROW shows its message.
  REQUIRE_NOTHROW(v = t.run(read_text(file)));
  if (!v.accepted) {
    CHECK_FALSE(v.error.empty());
    CHECK(v.error.find('\n') == std::string::npos);
  }
  return v;
}

}  // namespace

TEST_CASE("every fuzz seed and regression input is accepted or rejected cleanly", "[fuzz]") {
  const auto inputs = inputs_by_target();
  for (const auto& t : all_targets()) {
    const auto it = inputs.find(std::string(t.name));
    REQUIRE(it != inputs.end());
    CHECK(it->second.size() >= 5);  // a target without seeds would fuzz from nothing
    for (const auto& file : it->second) (void)replay(t, file);
  }
}

TEST_CASE("the fuzz targets accept the valid seeds and reject the bad ones", "[fuzz]") {
  const auto inputs = inputs_by_target();
  auto find_target = [](std::string_view name) {
    for (const auto& t : all_targets())
      if (t.name == name) return t;
    FAIL("no fuzz target " << name);
    return all_targets().front();
  };
  for (const auto& [name, files] : inputs) {
    const auto t = find_target(name);
    for (const auto& file : files) {
      const std::string path = file.generic_string();
      const bool bad = path.find("/bad/") != std::string::npos;
      const bool builtin = path.find("/scenarios/") != std::string::npos;
      const bool valid_trace = path.find("/traces/valid.") != std::string::npos;
      if (!bad && !builtin && !valid_trace) continue;
      INFO("target " << name << ", input " << path);
      CHECK(replay(t, file).accepted == !bad);
    }
  }
}

TEST_CASE("fuzz targets: NUL-separated --set overrides reach the scenario parser", "[fuzz]") {
  const std::string scenario =
      R"({"schema": "pinbench.scenario/1", "name": "n", "kind": "transfer",)"
      R"( "matrix": {"bytes": ["4KiB", "1MiB"]}})";
  CHECK(pinbench::fuzz::scenario_parser(scenario).accepted);
  CHECK(pinbench::fuzz::scenario_parser(scenario + std::string("\0bytes=2MiB", 11)).accepted);
  const verdict bad = pinbench::fuzz::scenario_parser(scenario + std::string("\0byts=2MiB", 10));
  CHECK_FALSE(bad.accepted);
  CHECK_THAT(bad.error, Catch::Contains("did you mean \"bytes\""));
}

TEST_CASE("fuzz targets: an alloc conf's canonical form parses back to itself", "[fuzz]") {
  CHECK(pinbench::fuzz::alloc_conf("roundup_power2_divisions:[256:1,512:2,>:8]").accepted);
  CHECK(pinbench::fuzz::alloc_conf("max_split_size_mb:128,expandable_segments:True").accepted);
  CHECK_FALSE(pinbench::fuzz::alloc_conf("max_split_size_mb:-1").accepted);
}

TEST_CASE("fuzz targets: the pickle target reads snapshots and refuses code", "[fuzz]") {
  const fs::path traces = source_dir / "tests" / "data" / "traces";
  for (const char* name : {"snapshot-p2.pickle", "snapshot-p4.pickle", "snapshot-p5.pickle",
                           "snapshot-oom.pickle", "snapshot-after-oom.pickle"}) {
    INFO(name);
    CHECK(pinbench::fuzz::pickle(read_text(traces / name)).accepted);
  }
  const verdict global = pinbench::fuzz::pickle(read_text(traces / "bad" / "pickle-global.pickle"));
  CHECK_FALSE(global.accepted);
  CHECK_THAT(global.error, Catch::Contains("offset 2: opcode GLOBAL (0x63) refused"));
  // A plain pickle that is not a snapshot: read, then refused as a trace.
  const verdict plain = pinbench::fuzz::pickle(std::string("\x80\x04K\x01.", 5));
  CHECK_FALSE(plain.accepted);
  CHECK_THAT(plain.error, Catch::Contains("expected a dict at the top"));
}
