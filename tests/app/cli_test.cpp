// End-to-end checks of the pinbench executable: exit codes, one-line errors, nothing written.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "skip.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using pinbench::testing::line_count;
using pinbench::testing::run_pinbench;

namespace {

std::string data(const std::string& rel) {
  return pinbench::testing::source_dir() + "/tests/data/" + rel;
}

fs::path temp_dir(const std::string& name) {
  return pinbench::testing::fresh_dir("cli-" + name);
}

const char* k_tiny =
    " --set bytes=64KiB --set sampling.min_samples=2 --set sampling.min_time=0"
    " --set sampling.warmup=0 --set sampling.timeout=1s --quiet";

}  // namespace

TEST_CASE("every bad input gives exit 2, one line naming the problem, and no result file",
          "[app][cli]") {
  const fs::path dir = temp_dir("bad");
  const std::string out = (dir / "result.json").string();
  struct bad {
    std::string args;
    std::string expect;  // a piece the one error line must contain
  };
  const std::vector<bad> cases{
      {data("bad/syntax-error-missing-comma.json"), "line"},
      {data("bad/unknown-param.json"), "did you mean"},
      {data("bad/integer-as-text.json"), "expected"},
      {data("bad/zero-size.json"), "positive size"},
      {data("bad/negative-size.json"), "positive size"},
      {data("bad/unknown-enum-value.json"), "did you mean \"pinned\""},
      {data("bad/empty-matrix-list.json"), "non-empty"},
      {"builtin:transfer-modes --set byts=1MiB", "did you mean \"bytes\""},
      {data("does-not-exist.json"), "does-not-exist.json"},
      {dir.string(), "no scenario"},
      {"builtin:transfer-modes --backend tpu", "backend"},
      {"builtin:no-such-scenario", "no-such-scenario"},
      {"builtin:transfer-modes --backend host --host-fault slow=0%", "slow=P%"},
      {"builtin:transfer-modes --backend host --host-fault slow=fast", "slow=P%"},
      {"builtin:transfer-modes --repeat 0", "--repeat"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto o = run_pinbench("run " + c.args + " --out " + out);
    CHECK(o.code == 2);
    CHECK(line_count(o.err) == 1);
    CHECK(o.err.find(c.expect) != std::string::npos);
    CHECK(o.out.empty());
    CHECK_FALSE(fs::exists(out));
  }
  fs::remove_all(dir);
}

TEST_CASE("an output path that cannot be written is refused before measuring", "[app][cli]") {
  const auto o = run_pinbench("run builtin:transfer-modes --out /nonexistent-dir/r.json");
  CHECK(o.code == 2);
  CHECK(o.err.find("/nonexistent-dir") != std::string::npos);
  CHECK(o.out.empty());
}

TEST_CASE("backend cuda without a usable device is an environment error (exit 3)", "[app][cli]") {
  if (std::getenv("PINBENCH_EXPECT_GPU") != nullptr) {
    pinbench::testing::skip_case(
        "a GPU machine (PINBENCH_EXPECT_GPU): the cuda backend works here");
    return;
  }
  const auto o = run_pinbench(std::string("run builtin:transfer-modes --backend cuda") + k_tiny);
  if (o.code == 0) {
    pinbench::testing::skip_case(
        "a CUDA device is usable here; the no-device path is not exercised");
    return;
  }
  CHECK(o.code == 3);
  CHECK(line_count(o.err) == 1);
  CHECK(o.err.find("cuda") != std::string::npos);
}

TEST_CASE("run writes a parseable pinbench.result/1 with raw samples and the environment",
          "[app][cli]") {
  const fs::path dir = temp_dir("ok");
  const std::string out = (dir / "r.json").string();
  const auto o =
      run_pinbench(std::string("run builtin:transfer-modes --backend host --out ") + out + k_tiny);
  REQUIRE(o.code == 0);
  CHECK(o.out.find("transfer-modes") != std::string::npos);
  CHECK(o.out.find("host") != std::string::npos);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["schema"] == "pinbench.result/1");
  CHECK(j["environment"]["backend"] == "host");
  CHECK(j["environment"]["host"]["cores"].get<int>() >= 1);
  const auto& cases = j["scenarios"][0]["cases"];
  CHECK(cases.size() == 4);
  for (const auto& c : cases) {
    CHECK(c["status"] == "ok");
    const auto& bw = c["metrics"]["bandwidth"];
    CHECK(bw["unit"] == "GB/s");
    CHECK(bw["samples"].size() >= 2);
    CHECK(bw["summary"]["n"] == bw["samples"].size());
    CHECK(c["params"]["bytes"] == "64KiB");  // the override, shown as people write it
  }
  fs::remove_all(dir);
}

TEST_CASE("out - writes the JSON to stdout, --format csv writes CSV", "[app][cli]") {
  auto o = run_pinbench(std::string("run builtin:transfer-modes --backend host --out -") + k_tiny);
  REQUIRE(o.code == 0);
  CHECK(nlohmann::json::parse(o.out)["schema"] == "pinbench.result/1");
  o = run_pinbench(std::string("run builtin:transfer-modes --backend host --format csv") + k_tiny);
  REQUIRE(o.code == 0);
  CHECK(o.out.rfind("scenario,kind,case,status,backend", 0) == 0);
}

TEST_CASE("validate, list and info answer without measuring", "[app][cli]") {
  auto o = run_pinbench("validate " + pinbench::testing::source_dir() + "/scenarios");
  CHECK(o.code == 0);
  CHECK(o.out.find("transfer-size") != std::string::npos);
  o = run_pinbench("list");
  CHECK(o.code == 0);
  CHECK(o.out.find("builtin:transfer-overlap") != std::string::npos);
  o = run_pinbench("list --params");
  CHECK(o.code == 0);
  CHECK(o.out.find("overlap_compute") != std::string::npos);
  o = run_pinbench("info --format json");
  CHECK(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["backends"]["host"]["usable"] == true);
  CHECK(j["host"].contains("memlock_limit_bytes"));
  CHECK(j["host"].contains("shm_bytes"));
  o = run_pinbench("run --help");
  CHECK(o.code == 0);
  CHECK(o.out.find("--set") != std::string::npos);
  o = run_pinbench("frobnicate");
  CHECK(o.code == 2);
}
