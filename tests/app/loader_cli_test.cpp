// The loader kind through the pinbench executable: a run with its verdict in every format,
// load-time errors, and a failing worker recorded as a failed case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace fs = std::filesystem;
using pinbench::testing::fresh_dir;
using pinbench::testing::run_pinbench;

namespace {

const char* k_fast =
    " --backend host --quiet --set sampling.min_samples=1 --set sampling.max_samples=1"
    " --set sampling.warmup=0 --set dataset.samples=64 --set dataset.sample_bytes=1KiB"
    " --set dataset.cpu_per_sample=1us --set compute_per_batch=100us --set batch_size=8";

}  // namespace

TEST_CASE("loader: a built-in runs end to end with its verdict in JSON, table and Markdown",
          "[app][loader]") {
  const fs::path dir = fresh_dir("loader");
  const std::string out = (dir / "r.json").string();
  const auto o = run_pinbench("run builtin:loader-workers --out " + out + k_fast);
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& s = j.at("scenarios").at(0);
  CHECK(s.at("kind") == "loader");
  CHECK(s.at("cases").size() == 5);
  const std::string verdict = s.at("verdict").get<std::string>();
  CHECK(verdict.find("busy") != std::string::npos);
  for (const auto& c : s.at("cases")) {
    CHECK(c.at("status") == "ok");
    CHECK(c.at("info").at("verified") == true);
  }

  const auto table = run_pinbench("run builtin:loader-workers --format table" + std::string(k_fast));
  REQUIRE(table.code == 0);
  CHECK(table.out.find("verdict: ") != std::string::npos);
  CHECK(table.out.find("gpu_busy") != std::string::npos);
  const auto md = run_pinbench("run builtin:loader-workers --format md" + std::string(k_fast));
  REQUIRE(md.code == 0);
  CHECK(md.out.find("**Verdict:**") != std::string::npos);
}

TEST_CASE("loader: bad params exit 2 with one line, a failing worker is a failed case",
          "[app][loader]") {
  const fs::path dir = fresh_dir("loader-bad");
  const std::string out = (dir / "r.json").string();
  for (const std::string args : {"--set pin_mode=rings", "--set dataset.sample_byte=1KiB",
                                 "--set pin_mode=ring --set ring_slots=2 --set num_workers=4"}) {
    INFO(args);
    const auto o = run_pinbench("run builtin:loader-workers --out " + out + " " + args);
    CHECK(o.code == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(out));
  }

  const auto o = run_pinbench("run builtin:loader-workers --out " + out + k_fast +
                              " --set dataset.fail_at_sample=20");
  CHECK(o.code == 1);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& cases = j.at("scenarios").at(0).at("cases");
  REQUIRE(cases.size() == 5);
  for (const auto& c : cases) {
    CHECK(c.at("status") == "error");
    CHECK(c.at("message").get<std::string>().find("sample 20") != std::string::npos);
  }
}
