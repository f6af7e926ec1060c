// `pinbench report` end to end: the golden result file rendered in each format, exit codes and
// one-line errors for bad inputs and outputs, nothing written when something is wrong, and
// sweep.sh's merged CSV, and that check-report.sh fails pages it should fail.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "cli_runner.hpp"
#include "golden.hpp"
#include "skip.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using pinbench::testing::line_count;
using pinbench::testing::read_text;
using pinbench::testing::run_pinbench;

namespace {

// The result document of tests/report/report_test.cpp's sample run, as to_json wrote it.
const std::string k_result = pinbench::testing::golden_path("report.json").string();

}  // namespace

TEST_CASE("report renders a result file as the table, CSV, Markdown and HTML", "[app][report]") {
  // No output asked for: the table on stdout, the same as run printed.
  auto o = run_pinbench("report " + k_result);
  REQUIRE(o.code == 0);
  CHECK(o.out == read_text(pinbench::testing::golden_path("report_table.txt")));
  CHECK(o.err.empty());

  // To stdout with '-': byte for byte the golden files of the writers.
  o = run_pinbench("report " + k_result + " --csv -");
  REQUIRE(o.code == 0);
  CHECK(o.out == read_text(pinbench::testing::golden_path("report.csv")));
  o = run_pinbench("report " + k_result + " --md -");
  REQUIRE(o.code == 0);
  CHECK(o.out == read_text(pinbench::testing::golden_path("report.md")));

  // To files, all at once, with the table as well.
  const fs::path dir = pinbench::testing::fresh_dir("report-cli");
  const auto html = dir / "r.html", md = dir / "r.md", csv = dir / "r.csv";
  o = run_pinbench("report " + k_result + " --html " + html.string() + " --md " + md.string() +
                   " --csv " + csv.string() + " --table");
  REQUIRE(o.code == 0);
  CHECK(o.out.find("h2d-pinned-vs-pageable (transfer)") != std::string::npos);
  CHECK(o.err.find("html report written to " + html.string()) != std::string::npos);
  CHECK(read_text(md) == read_text(pinbench::testing::golden_path("report.md")));
  CHECK(read_text(csv) == read_text(pinbench::testing::golden_path("report.csv")));
  const auto page = read_text(html);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<section class=\"scenario\" id=\"scenario-1\"") != std::string::npos);
  CHECK(page.find("<svg") != std::string::npos);  // the two transfer cases give bar charts
  // No temporary files are left beside the outputs.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 3);

  // --quiet: nothing on stderr.
  o = run_pinbench("report " + k_result + " --quiet --html " + html.string());
  CHECK(o.code == 0);
  CHECK(o.err.empty());
  CHECK(o.out.empty());
  fs::remove_all(dir);
}

TEST_CASE("report: a bad result file or output is exit 2, one line, nothing written",
          "[app][report]") {
  const fs::path dir = pinbench::testing::fresh_dir("report-cli-bad");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const auto html = dir / "out.html";
  const std::string syntax =
      write("syntax.json", "{\n  \"schema\": \"pinbench.result/1\",\n  oops\n}\n");
  const std::string scenario =
      write("scenario.json", R"({"schema": "pinbench.scenario/1", "name": "x"})");
  std::string text = read_text(k_result);
  text.replace(text.find("\"samples\": ["), 12, "\"samples\": [\"x\", ");
  const std::string bad_sample = write("sample.json", text);

  struct bad {
    std::string args;
    std::vector<std::string> expect;  // pieces the one error line must contain
  };
  const std::vector<bad> cases{
      {(dir / "missing.json").string(), {"missing.json", "cannot read"}},
      {syntax, {"syntax.json", "not valid JSON", "line 3"}},
      {scenario, {"scenario.json", "schema", "pinbench.result/1"}},
      {bad_sample, {"sample.json", "scenarios[0].cases[0].metrics.bandwidth.samples[0]"}},
      {k_result + " --md /nonexistent-dir/r.md", {"/nonexistent-dir"}},
      {k_result + " --csv - --md -", {"stdout"}},
      {k_result + " --md - --table", {"stdout"}},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto o = run_pinbench("report " + c.args + " --html " + html.string());
    CHECK(o.code == 2);
    CHECK(line_count(o.err) == 1);
    for (const auto& piece : c.expect) CHECK(o.err.find(piece) != std::string::npos);
    CHECK(o.out.empty());
    CHECK_FALSE(fs::exists(html));
  }
  // The result argument is required.
  const auto o = run_pinbench("report");
  CHECK(o.code == 2);
  CHECK(o.err.find("result") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep.sh writes one result per point and one merged CSV", "[app][report][sweep]") {
  const fs::path dir = pinbench::testing::fresh_dir("sweep");
  const std::string cmd = "PINBENCH=" + pinbench::testing::pinbench_exe() + " " +
                          pinbench::testing::source_dir() + "/scripts/sweep.sh --out-dir " +
                          dir.string() +
                          " builtin:transfer-modes bytes 64KiB 256KiB -- --backend host"
                          " --set memory=pinned --set sampling.warmup=0"
                          " --set sampling.min_samples=2 --set sampling.max_samples=2"
                          " --set sampling.min_time=0 --set sampling.timeout=1s"
                          " >" +
                          (dir / "stdout.txt").string() + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(fs::exists(dir / "bytes=64KiB.json"));
  CHECK(fs::exists(dir / "bytes=256KiB.json"));
  const auto merged = read_text(dir / "sweep.csv");
  std::istringstream lines(merged);
  std::string header, line;
  std::getline(lines, header);
  CHECK(header.rfind("scenario,kind,case,status,backend,", 0) == 0);
  std::size_t rows = 0, small = 0, large = 0;
  while (std::getline(lines, line)) {
    ++rows;
    CHECK(line != header);  // one header only
    if (line.find(",64KiB,") != std::string::npos) ++small;
    if (line.find(",256KiB,") != std::string::npos) ++large;
  }
  CHECK(small > 0);
  CHECK(large > 0);
  CHECK(small == large);
  CHECK(rows == small + large);
  fs::remove_all(dir);
}

TEST_CASE("check-report.sh fails a page with an empty chart or a console message",
          "[app][report][browser]") {
  const fs::path dir = pinbench::testing::fresh_dir("check-report");
  const std::string head =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta "
      "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; img-src data:\"><link rel=\"icon\" href=\"data:,\"><title>t</title>"
      "</head><body>\n";
  const auto chart = [](const std::string& marks) {
    return "<svg class=\"chart\" id=\"c\" role=\"img\" aria-labelledby=\"c-title c-desc\" "
           "viewBox=\"0 0 100 100\" width=\"100\" height=\"100\"><title id=\"c-title\">a</title>"
           "<desc id=\"c-desc\">b</desc><text class=\"axis-label\" y=\"50\">x (s)</text>"
           "<g class=\"legend\"><g class=\"legend-entry\"><text y=\"90\">s</text></g></g>" +
           marks + "</svg>\n";
  };
  const auto check = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << head << body << "</body></html>\n";
    const std::string cmd = pinbench::testing::source_dir() + "/scripts/check-report.sh --page " +
                            (dir / name).string() + " --out-dir " + (dir / "out").string() + " >" +
                            (dir / "log").string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir / "log")};
  };

  const auto [empty_code, empty_log] =
      check("empty.html", chart("<path class=\"mark line\" d=\"\"/>"));
  if (empty_code == 77) {
    pinbench::testing::skip_case("no chromium here: " + empty_log);
    fs::remove_all(dir);
    return;
  }
  CHECK(empty_code == 1);
  CHECK(empty_log.find("c: nothing drawn") != std::string::npos);

  // The page's policy refuses the image, and the browser says so on its console.
  const auto [refused_code, refused_log] =
      check("refused.html", chart("<rect class=\"mark bar\" width=\"10\" height=\"10\"/>") +
                                "<img src=\"http://127.0.0.1:9/x.png\" alt=\"\">\n");
  CHECK(refused_code == 1);
  CHECK(refused_log.find("console messages") != std::string::npos);

  // The same chart, drawn, without the image: passes.
  const auto [good_code, good_log] =
      check("good.html", chart("<rect class=\"mark bar\" width=\"10\" height=\"10\"/>"));
  CHECK(good_code == 0);
  CHECK(good_log.find("passed: 1 charts drawn") != std::string::npos);
  fs::remove_all(dir);
}
