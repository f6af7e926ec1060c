// End-to-end checks of `pinbench compare` and scripts/ci-gate.sh: exit codes, one-line errors,
// the files written. Results are synthetic files; nothing is measured except in the last test.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "gate/fixtures.hpp"
#include "skip.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using namespace pinbench;
using namespace pinbench::testing;
using pinbench::testing::line_count;
using pinbench::testing::read_text;

namespace {

// A folder with base.json and the named current results, all synthetic.
struct files {
  fs::path dir;
  std::string base, same, slower, faster, noisy, gpu;

  files() : dir(fresh_dir("compare-cli")) {
    const auto at = [&](const char* name) { return (dir / name).string(); };
    base = at("base.json");
    same = at("same.json");
    slower = at("slower.json");
    faster = at("faster.json");
    noisy = at("noisy.json");
    gpu = at("gpu.json");
    const auto result = [](double time_ns, double noise, std::uint64_t seed,
                           const std::string& backend = "host",
                           const std::string& device = "host emulation (Test CPU)") {
      return make_result(
          {make_scenario(
              "transfer-modes", "transfer",
              {make_case(
                  "memory=pinned",
                  {make_metric("copy_time", "ns", "lower", synthetic(time_ns, noise, 12, seed)),
                   make_metric("bandwidth", "GB/s", "higher",
                               synthetic(64e9 / time_ns, noise, 12, seed + 1))})})},
          backend, device);
    };
    write_result(base, result(1e6, 0.01, 1));
    write_result(same, result(1e6, 0.01, 3));
    write_result(slower, result(1.25e6, 0.01, 5));
    write_result(faster, result(0.8e6, 0.01, 7));
    write_result(noisy, result(1.03e6, 0.10, 9));
    write_result(gpu, result(1e6, 0.01, 11, "cuda", "NVIDIA H200"));
  }
  ~files() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("compare: exit 0 without regression, 1 with one, 0 for improvements", "[app][compare]") {
  files f;
  SECTION("the same distribution") {
    const auto o = run_pinbench("compare " + f.base + " " + f.same);
    CHECK(o.code == 0);
    CHECK(o.out.find("unchanged") != std::string::npos);
    CHECK(o.out.find("gate passed") != std::string::npos);
    CHECK(o.err.empty());
  }
  SECTION("25% slower") {
    const auto o = run_pinbench("compare " + f.base + " " + f.slower);
    CHECK(o.code == 1);
    CHECK(o.out.find("regression") != std::string::npos);
    CHECK(o.out.find("gate failed") != std::string::npos);
  }
  SECTION("25% slower with --fail-on never") {
    const auto o = run_pinbench("compare " + f.base + " " + f.slower + " --fail-on never");
    CHECK(o.code == 0);
    CHECK(o.out.find("regression") != std::string::npos);
  }
  SECTION("faster: improvements never fail") {
    const auto o = run_pinbench("compare " + f.base + " " + f.faster + " --strict");
    CHECK(o.code == 0);
    CHECK(o.out.find("improvement") != std::string::npos);
  }
  SECTION("a wider --threshold lets a 25% change pass as unchanged") {
    const auto o = run_pinbench("compare " + f.base + " " + f.slower + " --threshold 40%");
    CHECK(o.code == 0);
  }
}

TEST_CASE("compare: a result compared with itself passes, every row unchanged or inconclusive",
          "[app][compare]") {
  files f;
  for (const auto& file : {f.base, f.noisy}) {
    INFO(file);
    const auto o = run_pinbench("compare " + file + " " + file + " --out -");
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["schema"] == "pinbench.compare/1");
    REQUIRE(!j["rows"].empty());
    for (const auto& row : j["rows"]) {
      const auto v = row["verdict"].get<std::string>();
      CHECK((v == "unchanged" || v == "inconclusive"));
      CHECK(row["ratio"] == 1.0);
      CHECK(row["p_value"] == 1.0);
    }
    CHECK(o.err.find("gate passed") != std::string::npos);  // the outcome goes to stderr
  }
}

TEST_CASE("compare: --strict (or --fail-on inconclusive) turns inconclusive into exit 3",
          "[app][compare]") {
  files f;
  const auto lenient = run_pinbench("compare " + f.base + " " + f.noisy);
  CHECK(lenient.code == 0);
  CHECK(lenient.out.find("inconclusive") != std::string::npos);
  CHECK(run_pinbench("compare " + f.base + " " + f.noisy + " --strict").code == 3);
  CHECK(run_pinbench("compare " + f.base + " " + f.noisy + " --fail-on inconclusive").code == 3);
}

TEST_CASE("compare: --out, --md and --junit write their files, --format picks stdout",
          "[app][compare]") {
  files f;
  const auto out = f.dir / "cmp.json", md = f.dir / "cmp.md", junit = f.dir / "junit.xml";
  const auto o =
      run_pinbench("compare " + f.base + " " + f.slower + " --out " + out.string() + " --md " +
                   md.string() + " --junit " + junit.string() + " --format md");
  CHECK(o.code == 1);
  CHECK(o.out.rfind("## pinbench compare: failed", 0) == 0);
  CHECK(line_count(o.err) == 1);  // the outcome line
  const auto j = nlohmann::json::parse(read_text(out));
  CHECK(j["exit_code"] == 1);
  CHECK(j["counts"]["regression"] == 2);
  for (const auto& row : j["rows"])
    for (const char* key :
         {"base", "current", "interval", "p_value", "threshold", "verdict", "reason"})
      CHECK(row.contains(key));
  CHECK(read_text(md) == o.out);
  const auto xml = read_text(junit);
  CHECK(xml.rfind("<?xml", 0) == 0);
  CHECK(xml.find("<testsuites name=\"pinbench compare\" tests=\"2\" failures=\"2\"") !=
        std::string::npos);
  CHECK(xml.find("<failure type=\"regression\"") != std::string::npos);

  const auto json = run_pinbench("compare " + f.base + " " + f.same + " --format json");
  CHECK(json.code == 0);
  CHECK(nlohmann::json::parse(json.out)["counts"]["unchanged"] == 2);
  const auto only =
      run_pinbench("compare " + f.base + " " + f.slower + " --metric bandwidth --out -");
  CHECK(nlohmann::json::parse(only.out)["rows"].size() == 1);
}

TEST_CASE("compare: --html writes the verdicts as a self-contained page", "[app][compare][html]") {
  files f;
  const auto page = f.dir / "compare.html";
  std::ofstream(page) << "an older page";  // replaced whole, atomically
  const auto o = run_pinbench("compare " + f.base + " " + f.slower + " --html " + page.string());
  CHECK(o.code == 1);
  CHECK(o.out.find("regression") != std::string::npos);  // the table still goes to stdout
  const auto html = read_text(page);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';") !=
        std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<h1>pinbench compare: failed</h1>") != std::string::npos);
  CHECK(html.find("<tr class=\"verdict-regression\">") != std::string::npos);
  // Both gated metrics regressed: each has its samples (12 a side) and its interval drawn.
  CHECK(std::count(html.begin(), html.end(), '\n') > 100);
  std::size_t strips = 0, intervals = 0;
  for (auto at = html.find("chart strip-chart"); at != std::string::npos;
       at = html.find("chart strip-chart", at + 1))
    ++strips;
  for (auto at = html.find("chart interval-chart"); at != std::string::npos;
       at = html.find("chart interval-chart", at + 1))
    ++intervals;
  CHECK(strips == 2);
  CHECK(intervals == 2);
  CHECK(html.find(">copy_time (ms)</text>") != std::string::npos);
  // Nothing left beside it (the atomic write's temporary file is renamed or removed).
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(f.dir))
    entries += e.path().filename().string().find("compare.html") != std::string::npos;
  CHECK(entries == 1);

  // --html - puts the page on stdout instead of the table; the outcome goes to stderr.
  const auto out = run_pinbench("compare " + f.base + " " + f.same + " --html -");
  CHECK(out.code == 0);
  CHECK(out.out.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(out.err.find("gate passed") != std::string::npos);

  // An unwritable page is refused before anything is compared.
  const auto bad =
      run_pinbench("compare " + f.base + " " + f.same + " --html /nonexistent-dir/c.html");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("/nonexistent-dir") != std::string::npos);
  CHECK(bad.out.empty());
  const auto both = run_pinbench("compare " + f.base + " " + f.same + " --html - --out -");
  CHECK(both.code == 2);

  const auto help = run_pinbench("compare --help");
  CHECK(help.out.find("--html") != std::string::npos);
}

TEST_CASE("check-report.sh --page passes the compare --html page", "[app][compare][browser]") {
  files f;
  const auto page = f.dir / "compare.html";
  REQUIRE(run_pinbench("compare " + f.base + " " + f.slower + " --html " + page.string()).code ==
          1);
  const auto log = f.dir / "check.log";
  const std::string cmd = fmt::format("{}/scripts/check-report.sh --page {} --out-dir {} >{} 2>&1",
                                      pinbench::testing::source_dir(), page.string(),
                                      (f.dir / "check").string(), log.string());
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 77) {
    pinbench::testing::skip_case("no chromium here: " + read_text(log));
    return;
  }
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(read_text(log).find("check-report: passed: 4 charts drawn") != std::string::npos);
}

TEST_CASE("compare: a missing baseline or incomparable results give exit 3 and one line",
          "[app][compare]") {
  files f;
  const auto missing = (f.dir / "no-baseline.json").string();
  auto o = run_pinbench("compare " + missing + " " + f.same);
  CHECK(o.code == 3);
  CHECK(line_count(o.err) == 1);
  CHECK(o.err.find("missing baseline: " + missing) != std::string::npos);
  CHECK(o.err.find("pinbench run --out") != std::string::npos);
  CHECK(o.out.empty());

  o = run_pinbench("compare " + f.base + " " + f.gpu);
  CHECK(o.code == 3);
  CHECK(line_count(o.err) == 1);
  CHECK(o.err.find("incomparable") != std::string::npos);
  CHECK(o.err.find("backend \"host\" vs \"cuda\"") != std::string::npos);
  CHECK(o.out.empty());

  o = run_pinbench("compare " + f.base + " " + f.gpu + " --allow-env-mismatch");
  CHECK(o.code == 0);
  CHECK(o.out.find("warning: compared across environments") != std::string::npos);
}

TEST_CASE("compare: malformed inputs and bad options give exit 2 and one line", "[app][compare]") {
  files f;
  const auto write = [&](const char* name, const std::string& text) {
    const auto p = (f.dir / name).string();
    std::ofstream(p) << text;
    return p;
  };
  const auto syntax = write("syntax.json", "{\n  \"schema\": \"pinbench.result/1\",\n  oops\n}\n");
  auto doc = nlohmann::json::parse(read_text(f.same));
  doc["scenarios"][0]["cases"][0]["metrics"]["copy_time"]["samples"][1] = "fast";
  const auto typed = write("typed.json", doc.dump());
  const auto schema = write("schema.json", R"({"schema": "pinbench.scenario/1"})");

  struct bad {
    std::string args, expect1, expect2;
  };
  const std::vector<bad> cases{
      {f.base + " " + syntax, "syntax.json", "line 3, column 3"},
      {f.base + " " + typed, "typed.json", "scenarios[0].cases[0].metrics.copy_time.samples[1]"},
      {schema + " " + f.base, "schema.json", "pinbench.result/1"},
      {f.base + " " + (f.dir / "absent.json").string(), "absent.json", "cannot read"},
      {f.base + " " + f.same + " --threshold 5", "--threshold", "percentage"},
      {f.base + " " + f.same + " --strict --fail-on never", "--strict", "never"},
      {f.base + " " + f.same + " --fail-on sometimes", "--fail-on", "sometimes"},
      {f.base + " " + f.same + " --metric bandwith", "bandwith", "did you mean \"bandwidth\""},
      {f.base + " " + f.same + " --junit /nonexistent-dir/j.xml", "/nonexistent-dir", ""},
      {f.base, "current", ""},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto o = run_pinbench("compare " + c.args);
    CHECK(o.code == 2);
    CHECK(line_count(o.err) == 1);
    CHECK(o.err.find(c.expect1) != std::string::npos);
    CHECK(o.err.find(c.expect2) != std::string::npos);
    CHECK(o.out.empty());
  }
}

TEST_CASE("ci-gate.sh: a missing baseline is exit 3 with the command that creates one",
          "[app][compare]") {
  const auto dir = fresh_dir("ci-gate-missing");
  const std::string cmd = "PINBENCH=" + pinbench::testing::pinbench_exe() +
                          " GATE_OUT=" + (dir / "out").string() + " " +
                          pinbench::testing::source_dir() + "/scripts/ci-gate.sh " +
                          (dir / "baseline.json").string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 512> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(line_count(out) == 1);
  CHECK(out.find("missing baseline") != std::string::npos);
  CHECK(out.find("pinbench run") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

TEST_CASE("ci-gate.sh: runs a suite, compares, writes Markdown and JUnit, appends the summary",
          "[app][compare]") {
  const auto dir = fresh_dir("ci-gate-run");
  const std::string tiny =
      " builtin:transfer-modes --backend host --set bytes=64KiB --set sampling.min_samples=3"
      " --set sampling.min_time=0 --set sampling.warmup=0 --set sampling.timeout=1s";
  const auto base = (dir / "baseline.json").string();
  REQUIRE(run_pinbench("run" + tiny + " --quiet --out " + base).code == 0);
  const auto summary = dir / "summary.md";
  const std::string cmd =
      "PINBENCH=" + pinbench::testing::pinbench_exe() + " GATE_OUT=" + (dir / "gate").string() +
      " GITHUB_STEP_SUMMARY=" + summary.string() + " COMPARE_ARGS='--fail-on never' " +
      pinbench::testing::source_dir() + "/scripts/ci-gate.sh " + base + tiny + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 0);  // --fail-on never: a noisy machine cannot fail this
  for (const char* name : {"current.json", "compare.json", "compare.md", "junit.xml"})
    CHECK(fs::exists(dir / "gate" / name));
  CHECK(read_text(summary) == read_text(dir / "gate" / "compare.md"));
  CHECK(read_text(summary).find("## pinbench compare") == 0);
  fs::remove_all(dir);
}

TEST_CASE("compare: a folder of results, or --baseline, is one side with each file's rounds",
          "[app][compare][rounds]") {
  files f;
  const auto history = f.dir / "history";
  fs::create_directories(history);
  fs::copy_file(f.base, history / "run-1.json");
  fs::copy_file(f.same, history / "run-2.json");
  std::ofstream(history / "notes.txt") << "not a result\n";  // only *.json is read
  SECTION("a folder") {
    const auto o = run_pinbench("compare " + history.string() + " " + f.same + " --out -");
    INFO(o.err);
    REQUIRE(o.code == 0);
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["base"]["file"].get<std::string>().find("(2 results)") != std::string::npos);
    CHECK(j["rows"][0]["base"]["rounds"] == 2);
    CHECK(j["rows"][0]["current"]["rounds"] == 1);
    CHECK(j["rows"][0]["noise_source"] == "rounds");
    CHECK(j["rows"][0]["noise_freedom"] == 1);  // two rounds on the baseline side
    CHECK(j["rows"][0]["noise_bound"].get<double>() >= j["rows"][0]["noise"].get<double>());
    CHECK(j["warnings"].dump().find("the baseline is one run") == std::string::npos);
  }
  SECTION("one baseline file is a comparison that cannot see run-to-run drift, and says so") {
    const auto o = run_pinbench("compare " + f.base + " " + f.same + " --out -");
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["warnings"].dump().find("the baseline is one run") != std::string::npos);
  }
  SECTION("--baseline adds files to BASE, and a slower current still fails") {
    const auto o =
        run_pinbench("compare " + f.base + " --baseline " + f.same + " " + f.slower + " --out -");
    CHECK(o.code == 1);
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["rows"][0]["base"]["rounds"] == 2);
  }
  SECTION("an empty folder is a missing baseline") {
    const auto empty = f.dir / "empty";
    fs::create_directories(empty);
    const auto o = run_pinbench("compare " + empty.string() + " " + f.same);
    CHECK(o.code == 3);
    CHECK(line_count(o.err) == 1);
    CHECK(o.err.find("holds no result") != std::string::npos);
  }
  SECTION("results of different devices in one folder are refused") {
    fs::copy_file(f.gpu, history / "run-3.json");
    const auto o = run_pinbench("compare " + history.string() + " " + f.same);
    CHECK(o.code == 3);
    CHECK(o.err.find("one side of the comparison") != std::string::npos);
  }
}

TEST_CASE("ci-gate.sh --ab: alternates two binaries, one round per process, and compares",
          "[app][compare][rounds]") {
  const auto dir = fresh_dir("ci-gate-ab");
  const std::string tiny =
      " builtin:transfer-modes --backend host --set bytes=64KiB --set sampling.min_samples=3"
      " --set sampling.max_samples=3 --set sampling.min_time=0 --set sampling.warmup=0"
      " --set sampling.timeout=1s";
  const std::string exe = pinbench::testing::pinbench_exe();
  const std::string cmd = "PINBENCH=" + exe + " GATE_OUT=" + (dir / "gate").string() +
                          " GATE_ROUNDS=2 COMPARE_ARGS='--fail-on never' " +
                          pinbench::testing::source_dir() + "/scripts/ci-gate.sh --ab " + exe +
                          " " + exe + tiny + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 0);
  for (const char* name : {"old/round-1.json", "old/round-2.json", "new/round-1.json",
                           "new/round-2.json", "compare.json", "compare.md", "junit.xml"})
    CHECK(fs::exists(dir / "gate" / name));
  const auto j = nlohmann::json::parse(read_text(dir / "gate" / "compare.json"));
  CHECK(j["rows"][0]["base"]["rounds"] == 2);
  CHECK(j["rows"][0]["current"]["rounds"] == 2);
  fs::remove_all(dir);
}

// Each round's process plans again from the options it is given and measures only the plan of
// the process that started it (plan::fingerprint): a round given other options refuses.
TEST_CASE("run --repeat: a round's process refuses a plan other than its parent's",
          "[app][rounds]") {
  const auto dir = fresh_dir("round-plan");
  const std::string round =
      "run builtin:transfer-modes --backend host --set bytes=64KiB --set sampling.min_samples=3"
      " --set sampling.max_samples=3 --set sampling.min_time=0 --set sampling.warmup=0"
      " --repeat 3 --round 1 --quiet --out " +
      (dir / "round.json").string();
  // The round names the plan it made when the fingerprint it is given differs.
  const auto wrong = run_pinbench(round + " --plan-fingerprint 0000000000000000");
  REQUIRE(wrong.code == 2);
  CHECK(wrong.err.find("round 2 of 3 planned ") != std::string::npos);
  CHECK(!fs::exists(dir / "round.json"));
  const auto at = wrong.err.find("planned ") + 8;
  const std::string fingerprint = wrong.err.substr(at, 16);
  REQUIRE(fingerprint.find_first_not_of("0123456789abcdef") == std::string::npos);
  // With its parent's fingerprint it measures.
  const auto same = run_pinbench(round + " --plan-fingerprint " + fingerprint);
  INFO(same.err);
  CHECK(same.code == 0);
  CHECK(fs::exists(dir / "round.json"));
  // One option changed (a param, the seed, a fault of the host backend): refused.
  for (const std::string changed :
       {" --set bytes=128KiB", " --seed 7", " --host-fault slow=10%", " --numa none"}) {
    INFO(changed);
    const auto o = run_pinbench(round + changed + " --plan-fingerprint " + fingerprint);
    CHECK(o.code == 2);
    CHECK(o.err.find("the process that started it planned " + fingerprint) != std::string::npos);
  }
  // --round alone is not for people: it comes with the parent's fingerprint.
  const auto bare = run_pinbench(round);
  CHECK(bare.code == 2);
  CHECK(bare.err.find("--plan-fingerprint") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("run --repeat: rounds in processes (the default) or in one, samples labelled either way",
          "[app][rounds]") {
  const auto dir = fresh_dir("repeat-modes");
  const std::string tiny =
      "run builtin:transfer-modes --backend host --set bytes=64KiB --set sampling.min_samples=3"
      " --set sampling.max_samples=3 --set sampling.min_time=0 --set sampling.warmup=0 --repeat 2";
  for (const std::string mode : {"", " --rounds-in one-process"}) {
    INFO(mode);
    const auto out = dir / "r.json";
    const auto o = run_pinbench(tiny + mode + " --out " + out.string());
    INFO(o.err);
    REQUIRE(o.code == 0);
    CHECK(o.err.find("x 2 rounds") != std::string::npos);
    CHECK((o.err.find("round 2 of 2 (its own process): done") != std::string::npos) ==
          mode.empty());
    const auto j = nlohmann::json::parse(read_text(out));
    CHECK(j["repeat"] == 2);
    CHECK(j["command_line"].get<std::string>().find("--repeat 2") != std::string::npos);
    const auto& cases = j["scenarios"][0]["cases"];
    REQUIRE(cases.size() == 4);
    for (const auto& c : cases) {
      CHECK(c["status"] == "ok");
      const auto& m = c["metrics"]["bandwidth"];
      CHECK(m["samples"].size() == 6);
      CHECK(m["rounds"] == nlohmann::json::array({0, 0, 0, 1, 1, 1}));
    }
  }
  fs::remove_all(dir);
}
