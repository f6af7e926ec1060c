// `pinbench tune loader` through the very CLI, on the host backend: the answer's structure and
// the model's promises (never exact worker counts: a loaded machine has fewer free cores), the
// result file and its trials' cases, JSON on stdout, the budget, bad inputs, an image folder.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_in_process.hpp"
#include "image/image_set.hpp"
#include "image/jpeg.hpp"
#include "result/result_io.hpp"
#include "result/tune.hpp"
#include "scratch_dir.hpp"
#include "support.hpp"
#include "tune/loader_tune.hpp"

namespace fs = std::filesystem;

namespace {

using pinbench::testing::run_cli_in_process;

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t end = line.find(' ', at);
    const std::size_t stop = end == std::string::npos ? line.size() : end;
    if (stop > at) out.push_back(line.substr(at, stop - at));
    at = stop + 1;
  }
  return out;
}

// num_workers=N in a DataLoader(...) line or a trial's label; 0 when it names none.
int workers_in(const std::string& text) {
  std::smatch m;
  static const std::regex re("num_workers=([0-9]+)");
  return std::regex_search(text, m, re) ? std::stoi(m[1]) : 0;
}

// Every trial names a case of the result that holds its samples, and the chosen one is the
// confirming run when there is one.
void check_trials_name_cases(const pinbench::result::run_result& r) {
  REQUIRE(r.tune);
  const auto& t = *r.tune;
  std::set<std::pair<std::string, std::string>> cases;
  for (const auto& sc : r.scenarios)
    for (const auto& c : sc.cases) CHECK(cases.insert({sc.name, c.id}).second);
  CHECK(cases.size() == t.trials.size());
  for (const auto& trial : t.trials) {
    INFO(trial.label);
    CHECK(cases.count({trial.scenario, trial.case_id}) == 1);
    CHECK((trial.phase == pinbench::result::trial_phase::search ||
           trial.phase == pinbench::result::trial_phase::confirm));
    CHECK(trial.note.size() > 0);
  }
  REQUIRE(t.chosen);
  REQUIRE(*t.chosen < t.trials.size());
  REQUIRE(t.baseline);
  CHECK(t.trials[*t.baseline].label == "num_workers=0, pin_memory=False");
  CHECK(t.question == pinbench::result::tune_question::loader);
  CHECK(t.chart_metric == "gpu_busy");
  // A missed goal is said on the answer's first line, so that its code is never taken for a met
  // one.
  const std::string code_line = t.goal_met ? t.answer : t.answer.substr(t.answer.find('\n') + 1);
  if (!t.goal_met) CHECK(t.answer.rfind("# best found, does not hold the target: ", 0) == 0);
  CHECK(code_line.rfind("loader = DataLoader(ds, batch_size=", 0) == 0);
  // A trial with workers is long enough that what they hold (workers x prefetch) is a small part.
  for (const auto& trial : t.trials) {
    const int w = workers_in(trial.label);
    if (w == 0 || trial.phase != pinbench::result::trial_phase::search) continue;
    std::smatch m;
    static const std::regex prefetch_re("prefetch_factor=([0-9]+)");
    REQUIRE(std::regex_search(trial.label, m, prefetch_re));
    const auto runs = std::find_if(trial.cells.begin(), trial.cells.end(),
                                   [](const auto& cell) { return cell.first == "batches x runs"; });
    REQUIRE(runs != trial.cells.end());
    INFO(trial.label << ": " << runs->second);
    CHECK(std::stoi(runs->second) >= 4 * w * std::stoi(m[1]) + 8);
  }
  CHECK(workers_in(t.answer) == workers_in(t.trials[*t.chosen].label));
  CHECK(t.verdict.find("host backend") != std::string::npos);
  // goal_met: the confirming run held the target, and it is the chosen trial.
  if (t.goal_met) {
    CHECK(t.trials[*t.chosen].phase == pinbench::result::trial_phase::confirm);
    CHECK(t.trials[*t.chosen].meets_goal);
    CHECK(t.trials[*t.chosen].value >= t.chart_target);
  }
}

}  // namespace

TEST_CASE("tune loader: a batch that one worker cannot build in a step needs two or more",
          "[tune][loader]") {
  const pinbench::testing::scratch_dir dir("tune-loader");
  const std::string out = (dir.path() / "tune.json").string();
  // 4 x 5 ms = 20 ms of CPU per batch against a 10 ms step: num_workers 0 and 1 keep the device
  // at most half busy, whatever the machine; only two workers or more can reach 0.7.
  const auto o = run_cli_in_process(
      {"tune", "loader", "--cpu-per-sample", "5ms", "--batch-size", "4", "--step-time", "10ms",
       "--target-busy", "0.7", "--backend", "host", "--budget", "12s", "--out", out},
      dir.path());
  INFO(o.err);
  INFO(o.out);
  REQUIRE((o.code == 0 || o.code == 1));
  const auto r = pinbench::result::read_result_file(out);
  check_trials_name_cases(r);
  const auto& t = *r.tune;
  CHECK(t.inputs.at("max_workers").get<unsigned>() >= 1);
  CHECK(t.inputs.at("step_time") == "10.00 ms");
  for (const auto& trial : t.trials) {
    INFO(trial.label);
    // Zero and one worker: the device waits for every batch half the time or more.
    if (trial.value && workers_in(trial.label) <= 1) CHECK(!trial.meets_goal);
  }
  if (o.code == 0) {
    CHECK(t.goal_met);
    CHECK(workers_in(t.answer) >= 2);
    CHECK(t.answer.find("persistent_workers=True") != std::string::npos);
  } else {
    CHECK(!t.goal_met);
    // Not met on a loaded machine: either the best was never confirmed, or it was and fell
    // short, and then the verdict says why (the CPU, or a wait the batches' CPU does not explain).
    const bool unconfirmed = t.verdict.find("not confirmed") != std::string::npos;
    const bool fell_short = t.verdict.find("no setting held the target") != std::string::npos;
    CHECK((unconfirmed || fell_short));
    if (fell_short)
      CHECK((t.verdict.find("what limits it is the CPU") != std::string::npos ||
             t.verdict.find("does not explain it") != std::string::npos));
  }
  // The terminal shows the trials, the verdict and, last, the code to paste.
  CHECK(o.out.find("verdict: ") != std::string::npos);
  CHECK(o.out.find(t.answer) != std::string::npos);
  CHECK(o.err.find("pinbench: tune: trial num_workers=0, pin_memory=False") != std::string::npos);

  // The result is an ordinary one: report and compare read it.
  const std::string html = (dir.path() / "tune.html").string();
  CHECK(run_cli_in_process({"report", out, "--html", html, "--quiet"}, dir.path()).code == 0);
  CHECK(fs::file_size(html) > 0);
  CHECK(run_cli_in_process({"compare", out, out}, dir.path()).code == 0);
}

TEST_CASE("tune loader: --format json prints the result and a short budget cuts the search",
          "[tune][loader]") {
  const pinbench::testing::scratch_dir dir("tune-loader-json");
  // 2 x 8 ms per batch against a 4 ms step: workers are needed, but a 1 s budget leaves no
  // room beside the baseline for a trial and the confirming run.
  const auto o = run_cli_in_process(
      {"tune", "loader", "--cpu-per-sample", "8ms", "--batch-size", "2", "--step-time", "4ms",
       "--backend", "host", "--budget", "1s", "--format", "json", "--quiet"},
      dir.path());
  INFO(o.err);
  CHECK(o.code == 1);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j.at("schema") == "pinbench.result/1");
  const auto& t = j.at("tune");
  CHECK(t.at("question") == "loader");
  CHECK(t.at("stopped_by") == "budget");
  CHECK(t.at("goal_met") == false);
  CHECK(t.at("inputs").at("target_busy") == 0.95);
  REQUIRE(t.at("trials").size() >= 1);
  CHECK(t.at("trials").at(0).at("label") == "num_workers=0, pin_memory=False");
  CHECK(t.at("trials").at(0).at("phase") == "search");
  CHECK(o.err.empty());

  // Read back, the names are the enumerations'; one that is none of them is refused with its
  // path.
  const auto back =
      pinbench::result::tune_from_json(nlohmann::ordered_json::parse(t.dump()), "r.json");
  CHECK(back.question == pinbench::result::tune_question::loader);
  CHECK(back.stopped_by == pinbench::result::search_stop::budget);
  auto bad = nlohmann::ordered_json::parse(t.dump());
  bad["trials"][0]["phase"] = "warmup";
  CHECK_THROWS_WITH(pinbench::result::tune_from_json(bad, "r.json"),
                    Catch::Contains("tune.trials[0].phase") &&
                        Catch::Contains("expected one of search, confirm, got \"warmup\""));
  // What a block answers is not guessed.
  auto unasked = nlohmann::ordered_json::parse(t.dump());
  unasked.erase("question");
  CHECK_THROWS_WITH(pinbench::result::tune_from_json(unasked, "r.json"),
                    Catch::Contains("tune.question") && Catch::Contains("missing"));
}

TEST_CASE("tune loader: bad inputs exit 2 with one line naming the option", "[tune][loader]") {
  const pinbench::testing::scratch_dir dir("tune-loader-bad");
  fs::create_directories(dir.path() / "empty" / "class_a");
  const std::string empty = (dir.path() / "empty").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--step-time 10ms", "--images"},
      {"--cpu-per-sample 1ms --images " + empty + " --step-time 10ms", "--images"},
      {"--images " + empty + " --step-time 10ms", "--images"},
      {"--images " + (dir.path() / "missing").string() + " --step-time 10ms", "--images"},
      {"--images " + empty + " --sample-bytes 1KiB --step-time 10ms", "--sample-bytes"},
      {"--cpu-per-sample 1ms --step-time 0", "--step-time"},
      {"--cpu-per-sample 1ms --step-time 10ms --target-busy 0", "--target-busy"},
      {"--cpu-per-sample 1ms --step-time 10ms --target-busy 1.5", "--target-busy"},
      {"--cpu-per-sample soon --step-time 10ms", "--cpu-per-sample"},
      {"--cpu-per-sample 1ms --step-time 10ms --budget 0", "--budget"},
      {"--cpu-per-sample 1ms --step-time 10ms --max-workers 300", "--max-workers"},
      {"--cpu-per-sample 1ms --step-time 10ms --batch-size 0", "--batch-size"},
  };
  for (const auto& [args, option] : cases) {
    INFO(args);
    std::vector<std::string> argv = {"tune", "loader", "--backend", "host"};
    for (auto& w : words(args)) argv.push_back(w);
    const auto o = run_cli_in_process(argv, dir.path());
    CHECK(o.code == 2);
    CHECK(pinbench::testing::line_count(o.err) == 1);
    CHECK(o.err.find(option) != std::string::npos);
    CHECK(o.err.find("not in range") == std::string::npos);  // our wording, not the parser's
    CHECK(o.out.empty());
  }
}

TEST_CASE("tune loader: steady gpu_busy leaves out the first batch and what was ready with it",
          "[tune][loader]") {
  using pinbench::tune::steady_gpu_busy;
  // 8 workers on 2 cores, a batch 128 ms of CPU (15.625 batches/s at most), a 20 ms step: the
  // first batch after 512 ms with 8 ready, consumed in 160 ms, then 20 more at 15.625/s.
  const double compute = 20e6, first = 512e6, steps = 28;
  const double span = first + 8 * compute + 20 / 15.625 * 1e9;
  const double run_busy = steps * compute / span;
  const double sustained = 15.625 * compute / 1e9;  // 0.3125
  CHECK(steady_gpu_busy(run_busy, steps, compute, first, 8) == Approx(sustained));
  // Leaving out only the first batch's wait would claim more than the workers sustain.
  CHECK(steady_gpu_busy(run_busy, steps, compute, first, 1) > sustained + 0.05);
  // Never below the whole run, never above 1, and unchanged where nothing can be left out.
  CHECK(steady_gpu_busy(0.99, 100, compute, 1e6, 4) <= 1.0);
  CHECK(steady_gpu_busy(0.5, 100, compute, 0, 1) >= 0.5);
  CHECK(steady_gpu_busy(0.4, 1, compute, first, 8) == 0.4);
  CHECK(steady_gpu_busy(0.4, 28, 0, first, 8) == 0.4);
}

TEST_CASE("tune loader: a folder of the user's JPEGs, decoded and augmented",
          "[tune][loader][image]") {
  const pinbench::testing::scratch_dir dir("tune-loader-images");
  const fs::path photos = dir.path() / "photos";
  for (int i = 0; i < 8; ++i) {
    const fs::path cls = photos / (i % 2 == 0 ? "cat" : "dog");
    fs::create_directories(cls);
    pinbench::testing::write_binary(
        cls / ("img_" + std::to_string(i) + ".jpg"),
        pinbench::image::encode_jpeg(pinbench::image::synthesize_image(64, 48, i), 90));
  }
  const std::string out = (dir.path() / "tune.json").string();
  const auto o = run_cli_in_process(
      {"tune", "loader", "--images", photos.string(), "--batch-size", "4", "--step-time", "5ms",
       "--target-busy", "0.5", "--backend", "host", "--budget", "8s", "--out", out, "--quiet"},
      dir.path());
  INFO(o.err);
  INFO(o.out);
  REQUIRE((o.code == 0 || o.code == 1));
  const auto r = pinbench::result::read_result_file(out);
  check_trials_name_cases(r);
  const auto& t = *r.tune;
  CHECK(t.inputs.at("images") == photos.string());
  CHECK(t.inputs.at("image_files_read") == 8);
  // Each trial decoded the user's files: its cells say what a sample cost.
  const auto& first = t.trials.front();
  const auto has = [&](const char* column) {
    return std::any_of(first.cells.begin(), first.cells.end(),
                       [&](const auto& cell) { return cell.first == column; });
  };
  CHECK(has("decode"));
  CHECK(has("augment"));
  const auto& c = r.scenarios.front().cases.front();
  CHECK(c.extra.at("images").at("generated") == false);
  CHECK(c.extra.at("images").at("dir") == photos.string());
  CHECK(c.params.at("dataset").at("source") == "jpeg");
}

TEST_CASE("tune loader: --out inside the --images folder is refused before anything runs",
          "[tune][loader][image]") {
  const pinbench::testing::scratch_dir dir("tune-loader-out-in-images");
  const fs::path photos = dir.path() / "photos";
  fs::create_directories(photos / "cat");
  const fs::path jpeg = photos / "cat" / "img_0.jpg";
  const auto bytes = pinbench::image::encode_jpeg(pinbench::image::synthesize_image(32, 24, 1), 90);
  pinbench::testing::write_binary(jpeg, bytes);
  // The JPEG itself, a new file in the folder, the folder itself, and the same through "..".
  const std::vector<std::string> outs = {jpeg.string(), (photos / "tune.json").string(),
                                         photos.string(),
                                         (photos / "cat" / ".." / "cat" / "img_0.jpg").string()};
  for (const auto& out : outs) {
    INFO(out);
    const auto o = run_cli_in_process({"tune", "loader", "--images", photos.string(), "--step-time",
                                       "5ms", "--backend", "host", "--budget", "2s", "--out", out},
                                      dir.path());
    CHECK(o.code == 2);
    CHECK(pinbench::testing::line_count(o.err) == 1);
    CHECK(o.err.find("--out") != std::string::npos);
    CHECK(o.err.find("--images") != std::string::npos);
    CHECK(o.out.empty());
  }
  CHECK(pinbench::testing::read_binary(jpeg) == bytes);
  CHECK(!fs::exists(photos / "tune.json"));
}
