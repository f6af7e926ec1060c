// `pinbench tune allocator`: the answer avoids the OOM that the setting in use meets, and
// `pinbench run` of the trace with that answer agrees; what it says when nothing can; its inputs.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "alloc/config.hpp"
#include "alloc/replay.hpp"
#include "alloc/workload.hpp"
#include "cli_in_process.hpp"
#include "result/result_io.hpp"
#include "scratch_dir.hpp"
#include "support.hpp"
#include "test_paths.hpp"

namespace pinbench::allocator_tune_test {

namespace {

using testing::run_cli_in_process;
using testing::scratch_dir;

std::string fragmentation_trace() {
  return testing::source_dir() + "/tests/data/traces/tune-fragmentation.json";
}

// A PyTorch snapshot of a run that died of OOM on 80 GiB (tests/data/snapshots/make_*.py):
// 300 KB, so kept out of the fuzz seeds (tests/data/traces/*.pickle).
std::string training_snapshot() {
  return testing::source_dir() + "/tests/data/snapshots/training-oom.pickle";
}

// The last line of the text: where the answer is printed.
std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto at = t.rfind('\n');
  return at == std::string::npos ? t : t.substr(at + 1);
}

// num_ooms of the one case of `pinbench run` over the trace with `config` on `capacity`.
double ooms_of_run(const scratch_dir& dir, const std::string& trace, const std::string& config,
                   const std::string& capacity) {
  const auto scenario = dir.path() / "replay.json";
  const auto out = dir.path() / "replay-result.json";
  std::ofstream(scenario)
      << testing::trace_replay_scenario("replay", trace, config, capacity).dump();
  const auto run = run_cli_in_process(
      {"run", scenario.string(), "--backend", "host", "-q", "--out", out.string()}, dir.path());
  INFO(run.err);
  REQUIRE(run.code == 0);
  const auto r = result::read_result_file(out.string());
  const auto ooms = result::finite_median(r.scenarios.at(0).cases.at(0), "num_ooms");
  REQUIRE(ooms);
  return *ooms;
}

}  // namespace

TEST_CASE("replay: the OOM a setting meets, and where", "[tune][alloc]") {
  const auto source = alloc::open_trace(fragmentation_trace());
  const auto events = alloc::read_all(*source);
  REQUIRE(events.events.size() == 6);
  const auto defaults = alloc::replay(events, {}, 1200ull << 20, std::nullopt);
  CHECK(defaults.ooms == 1);
  REQUIRE(defaults.first_oom_event);
  CHECK(*defaults.first_oom_event == 3);
  CHECK(defaults.first_oom.find("out of memory") != std::string::npos);
  const auto expandable = alloc::replay(
      events, alloc::parse_config("expandable_segments:True", {}, {}), 1200ull << 20, std::nullopt);
  CHECK(expandable.ooms == 0);
  CHECK_FALSE(expandable.first_oom_event);
  CHECK(expandable.stats.num_ooms == 0);
  // 600 MiB and 500 MiB live together: reserved at the peak holds at least them.
  CHECK(expandable.reserved_at_peak >= (1100ull << 20));
  CHECK(expandable.allocated_at_peak == (1100ull << 20));
}

TEST_CASE("tune allocator: the answer avoids the OOM, and pinbench run agrees", "[tune]") {
  const scratch_dir dir("tune-alloc");
  const auto out = dir.path() / "tune.json";
  const auto tuned =
      run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity", "1200MiB",
                          "--backend", "host", "-q", "--out", out.string()},
                         dir.path());
  INFO(tuned.err);
  REQUIRE(tuned.code == 0);
  const std::string answer = last_line(tuned.out);
  REQUIRE(answer.rfind("export PYTORCH_CUDA_ALLOC_CONF=", 0) == 0);
  CHECK(answer.find("no OOM") != std::string::npos);
  CHECK(answer.find("OOM at events[3]") != std::string::npos);  // what the defaults meet
  CHECK(tuned.out.find("backend: host") != std::string::npos);

  const auto r = result::read_result_file(out.string());
  REQUIRE(r.tune);
  const auto& t = *r.tune;
  CHECK(t.question == result::tune_question::allocator);
  CHECK(t.goal_met);
  REQUIRE(t.chosen);
  REQUIRE(t.baseline);
  CHECK(t.trials.at(*t.chosen).meets_goal);
  CHECK_FALSE(t.trials.at(*t.baseline).meets_goal);
  CHECK(t.trials.at(*t.chosen).phase == result::trial_phase::confirm);
  // Every trial names a case of the result that holds its figures.
  for (const auto& trial : t.trials) {
    bool found = false;
    for (const auto& s : r.scenarios)
      for (const auto& c : s.cases)
        found = found || (s.name == trial.scenario && c.id == trial.case_id);
    INFO(trial.scenario << " / " << trial.case_id);
    CHECK(found);
  }

  // The config of the answer, replayed by `pinbench run` on the same capacity.
  const std::size_t from = std::string("export PYTORCH_CUDA_ALLOC_CONF=").size();
  const std::string config = answer.substr(from, answer.find(' ', from) - from);
  CHECK(ooms_of_run(dir, fragmentation_trace(), config, "1200MiB") == 0);
  CHECK(ooms_of_run(dir, fragmentation_trace(), "", "1200MiB") > 0);

  // report draws it: the answer first, with its chart.
  const auto html = dir.path() / "tune.html";
  REQUIRE(run_cli_in_process({"report", out.string(), "--html", html.string()}, dir.path()).code ==
          0);
  std::ifstream in(html);
  const std::string page(std::istreambuf_iterator<char>(in), {});
  CHECK(page.find("The answer (pinbench tune allocator)") != std::string::npos);
  CHECK(page.find("PYTORCH_CUDA_ALLOC_CONF") != std::string::npos);
  CHECK(page.find("<svg") != std::string::npos);

  // The Markdown report (a step summary) and the table show the same document: the trials
  // ranked, the chosen one marked, and the answer to paste, whole, last.
  const auto md = run_cli_in_process({"report", out.string(), "--md", "-"}, dir.path());
  REQUIRE(md.code == 0);
  CHECK(md.out.find("| `-&gt;` |") == std::string::npos);
  CHECK(md.out.find("| **->** |") != std::string::npos);
  CHECK(md.out.find("\n```\n" + answer + "\n```\n") != std::string::npos);
  const auto table = run_cli_in_process({"report", out.string()}, dir.path());
  REQUIRE(table.code == 0);
  CHECK(last_line(table.out) == answer);
  CHECK(table.out.find("-> ") != std::string::npos);
}

TEST_CASE("tune allocator: a PyTorch snapshot's OOM, avoided, and pinbench run agrees", "[tune]") {
  const scratch_dir dir("tune-alloc-snapshot");
  // No --capacity: the snapshot's OOM says what the program had (reserved then plus free).
  const auto tuned = run_cli_in_process(
      // One replay at a time: each reserves 17 x 80 GiB of address space, and ThreadSanitizer's
      // builds have less of it than that twice over.
      {"tune", "allocator", training_snapshot(), "--backend", "host", "-q", "--format", "json",
       "--jobs", "1"},
      dir.path());
  INFO(tuned.err);
  REQUIRE(tuned.code == 0);
  const auto doc = nlohmann::json::parse(tuned.out);
  const auto& t = doc.at("tune");
  CHECK(t.at("inputs").at("capacity") == 80ull << 30);
  CHECK(t.at("inputs").at("in_use_from") == "the snapshot's allocator_settings");
  CHECK(t.at("inputs").contains("snapshot_oom"));
  const std::string answer = t.at("answer");
  REQUIRE(answer.rfind("export PYTORCH_CUDA_ALLOC_CONF=", 0) == 0);
  const std::size_t from = std::string("export PYTORCH_CUDA_ALLOC_CONF=").size();
  const std::string config = answer.substr(from, answer.find(' ', from) - from);
  // The request that failed is replayed: the defaults meet the OOM the program met.
  CHECK(ooms_of_run(dir, training_snapshot(), "", "80GiB") > 0);
  CHECK(ooms_of_run(dir, training_snapshot(), config, "80GiB") == 0);
}

TEST_CASE("tune allocator: a pickle that names code is refused, nothing run", "[tune]") {
  const scratch_dir dir("tune-alloc-global");
  const auto o = run_cli_in_process(
      {"tune", "allocator",
       testing::source_dir() + "/tests/data/traces/bad/pickle-reduce-os-system.pickle",
       "--capacity", "1GiB", "--backend", "host", "-q"},
      dir.path());
  CHECK(o.code == 2);
  CHECK(o.err.find("GLOBAL") != std::string::npos);
  CHECK(o.err.find("refused") != std::string::npos);
  CHECK(o.out.empty());
}

TEST_CASE("tune allocator: when no setting can avoid the OOM it says by how much", "[tune]") {
  const scratch_dir dir("tune-alloc-none");
  // The trace holds 1100 MiB live at once: a 1000 MiB device cannot hold it under any setting.
  const auto tuned = run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity",
                                         "1000MiB", "--backend", "host", "-q"},
                                        dir.path());
  CHECK(tuned.code == 1);
  const std::string answer = last_line(tuned.out);
  CHECK(answer.rfind("# no setting avoids the OOM", 0) == 0);
  CHECK(answer.find("more than the device's") != std::string::npos);
}

TEST_CASE("tune allocator: the program's memory fraction holds in every setting tried", "[tune]") {
  const scratch_dir dir("tune-alloc-fraction");
  // 1200 MiB with set_per_process_memory_fraction(0.5): 600 MiB allowed, 1100 MiB live.
  const auto tuned = run_cli_in_process(
      {"tune", "allocator", fragmentation_trace(), "--capacity", "1200MiB", "--memory-fraction",
       "0.5", "--backend", "host", "-q", "--format", "json"},
      dir.path());
  CHECK(tuned.code == 1);
  const auto doc = nlohmann::json::parse(tuned.out);
  const std::string answer = doc.at("tune").at("answer");
  CHECK(answer.rfind("# no setting avoids the OOM", 0) == 0);
  CHECK(answer.find("memory fraction 0.5") != std::string::npos);
  for (const auto& trial : doc.at("tune").at("trials"))
    CHECK_FALSE(trial.at("meets_goal").get<bool>());
}

TEST_CASE("tune allocator: a search cut by its budget says so, never 'no setting'", "[tune]") {
  const scratch_dir dir("tune-alloc-budget");
  const auto tuned = run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity",
                                         "1200MiB", "--budget", "1ms", "--backend", "host", "-q"},
                                        dir.path());
  CHECK(tuned.code == 1);
  const std::string answer = last_line(tuned.out);
  CHECK(answer.rfind("# not found: the search was cut short", 0) == 0);
  CHECK(answer.find("--budget") != std::string::npos);
}

TEST_CASE("tune allocator: compare says whether two tunes' answers agree", "[tune][gate]") {
  const scratch_dir dir("tune-alloc-compare");
  const auto a = (dir.path() / "a.json").string(), b = (dir.path() / "b.json").string();
  for (const auto& [out, capacity] : {std::pair{a, "1200MiB"}, std::pair{b, "1000MiB"}})
    (void)run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity", capacity,
                              "--backend", "host", "-q", "--out", out},
                             dir.path());
  const auto same = run_cli_in_process({"compare", a, a}, dir.path());
  CHECK(same.out.find("tune: tune allocator: the same answer on both sides: export "
                      "PYTORCH_CUDA_ALLOC_CONF=") != std::string::npos);
  const auto changed = run_cli_in_process({"compare", a, b}, dir.path());
  CHECK(changed.out.find("tune: tune allocator: the answer changed") != std::string::npos);
  CHECK(changed.out.find("the goal is met in " + a + " only") != std::string::npos);
  CHECK(changed.out.find("asked with a different capacity:") != std::string::npos);
}

TEST_CASE("tune allocator: --format json prints the result document", "[tune]") {
  const scratch_dir dir("tune-alloc-json");
  const auto tuned = run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity",
                                         "1200MiB", "--backend", "host", "-q", "--format", "json"},
                                        dir.path());
  REQUIRE(tuned.code == 0);
  const auto doc = nlohmann::json::parse(tuned.out);
  CHECK(doc.at("schema") == "pinbench.result/1");
  CHECK(doc.at("tune").at("question") == "allocator");
  CHECK(doc.at("tune").at("answer").get<std::string>().rfind("export ", 0) == 0);
  CHECK(doc.at("environment").at("backend") == "host");
}

TEST_CASE("tune allocator: bad input is exit 2 naming the option or file", "[tune]") {
  const scratch_dir dir("tune-alloc-bad");
  SECTION("the host backend has no device to read the capacity from") {
    const auto o = run_cli_in_process(
        {"tune", "allocator", fragmentation_trace(), "--backend", "host", "-q"}, dir.path());
    CHECK(o.code == 2);
    CHECK(o.err.find("--capacity") != std::string::npos);
  }
  SECTION("a size that is not one") {
    const auto o = run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity",
                                       "lots", "--backend", "host", "-q"},
                                      dir.path());
    CHECK(o.code == 2);
    CHECK(o.err.find("--capacity") != std::string::npos);
  }
  SECTION("a bare number is bytes: far too small for a device") {
    const auto o = run_cli_in_process(
        {"tune", "allocator", fragmentation_trace(), "--capacity", "80", "--backend", "host", "-q"},
        dir.path());
    CHECK(o.code == 2);
    CHECK(o.err.find("a number alone is bytes") != std::string::npos);
  }
  SECTION("a trace without an allocation") {
    const auto empty = (dir.path() / "empty.json").string();
    std::ofstream(empty)
        << R"({"schema": "pinbench.trace/1", "events": [{"op": "mark", "label": "iteration"}]})";
    const auto o = run_cli_in_process(
        {"tune", "allocator", empty, "--capacity", "1GiB", "--backend", "host", "-q"}, dir.path());
    CHECK(o.code == 2);
    CHECK(o.err.find("empty.json") != std::string::npos);
    CHECK(o.err.find("no") != std::string::npos);
  }
  SECTION("a trace that is not there") {
    const auto missing = (dir.path() / "missing.json").string();
    const auto o = run_cli_in_process(
        {"tune", "allocator", missing, "--capacity", "1GiB", "--backend", "host", "-q"},
        dir.path());
    CHECK(o.code == 2);
    CHECK(o.err.find("missing.json") != std::string::npos);
  }
  SECTION("the result may not replace the trace") {
    const auto o =
        run_cli_in_process({"tune", "allocator", fragmentation_trace(), "--capacity", "1GiB",
                            "--backend", "host", "-q", "--out", fragmentation_trace()},
                           dir.path());
    CHECK(o.code == 2);
  }
}

}  // namespace pinbench::allocator_tune_test

namespace pinbench::allocator_tune_test {

TEST_CASE("tune allocator: a snapshot's replay checks itself, and says so before the answer",
          "[tune][recording]") {
  const scratch_dir dir("tune-alloc-self-check");
  const auto text = run_cli_in_process(
      {"tune", "allocator", training_snapshot(), "--backend", "host", "--jobs", "1"}, dir.path());
  INFO(text.err);
  REQUIRE(text.code == 0);
  // The fixture was written by pinbench under PyTorch 2.6's rules: its format says 2.5-2.7.
  const std::string line =
      "your settings, replayed by PyTorch 2.7's rules: PyTorch's 224 "
      "cudaMalloc/cudaFree decisions reproduced exactly\n";
  const auto at = text.out.find(line);
  REQUIRE(at != std::string::npos);
  CHECK(at < text.out.find("verdict: "));
  CHECK(last_line(text.out).rfind("export PYTORCH_CUDA_ALLOC_CONF=", 0) == 0);
}

TEST_CASE("tune allocator: the device whose trace has the OOM, without --device",
          "[tune][recording]") {
  const scratch_dir dir("tune-alloc-devices");
  const std::string snapshot = testing::source_dir() + "/tests/data/traces/snapshot-devices.pickle";
  const auto tuned = run_cli_in_process(
      {"tune", "allocator", snapshot, "--backend", "host", "-q", "--format", "json", "--jobs", "1"},
      dir.path());
  INFO(tuned.err);
  // 600 MiB asked with 100 MiB live on a 300 MiB device: no setting can (exit 1), but it is
  // device 1's OOM that was replayed, on the capacity its OOM shows.
  REQUIRE(tuned.code == 1);
  const auto t = nlohmann::json::parse(tuned.out).at("tune");
  CHECK(t.at("inputs").at("device") == 1);
  CHECK(t.at("inputs").at("device_from") == "the device whose trace has the OOM, of 2");
  CHECK(t.at("inputs").at("capacity") == 300ull << 20);
  CHECK(t.at("self_check") ==
        "your settings, replayed by PyTorch 2.7's rules: PyTorch's 1 "
        "cudaMalloc/cudaFree decision reproduced exactly");
  // --device still chooses.
  const auto zero =
      run_cli_in_process({"tune", "allocator", snapshot, "--device", "0", "--capacity", "1GiB",
                          "--backend", "host", "-q", "--format", "json", "--jobs", "1"},
                         dir.path());
  INFO(zero.err);
  REQUIRE(zero.code == 0);
  CHECK(nlohmann::json::parse(zero.out).at("tune").at("inputs").at("device") == 0);
}

TEST_CASE("tune allocator: --pytorch chooses the release's rules, and is checked",
          "[tune][recording]") {
  const scratch_dir dir("tune-alloc-pytorch");
  const auto tuned =
      run_cli_in_process({"tune", "allocator", training_snapshot(), "--pytorch", "2.4", "--backend",
                          "host", "-q", "--format", "json", "--jobs", "1"},
                         dir.path());
  INFO(tuned.err);
  REQUIRE(tuned.code == 0);
  const auto t = nlohmann::json::parse(tuned.out).at("tune");
  CHECK(t.at("inputs").at("pytorch") == "2.4");
  CHECK(t.at("inputs").at("pytorch_from") == "--pytorch");
  const auto bad = run_cli_in_process(
      {"tune", "allocator", training_snapshot(), "--pytorch", "1.13", "--backend", "host", "-q"},
      dir.path());
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--pytorch: expected a PyTorch release of 2.0 or later") != std::string::npos);
}

TEST_CASE(
    "tune allocator: the program's own memory fraction (its config's) stays under garbage "
    "collection, and its replay is checked",
    "[tune][recording]") {
  const scratch_dir dir("tune-alloc-fraction");
  const std::string snapshot =
      testing::source_dir() + "/tests/data/traces/snapshot-fraction.pickle";
  const auto tuned =
      run_cli_in_process({"tune", "allocator", snapshot, "--capacity", "1GiB", "--backend", "host",
                          "-q", "--format", "json", "--jobs", "1"},
                         dir.path());
  INFO(tuned.err);
  REQUIRE(tuned.code == 0);
  const auto doc = nlohmann::json::parse(tuned.out);
  const auto& t = doc.at("tune");
  CHECK(t.at("inputs").at("pytorch") == "2.10");
  bool gc_tried = false;
  for (const auto& trial : t.at("trials")) {
    const std::string label = trial.at("label");
    if (label.find("garbage_collection_threshold") == std::string::npos) continue;
    gc_tried = true;
    CHECK(label.find("memory fraction 0.9") != std::string::npos);
  }
  CHECK(gc_tried);
  CHECK(t.at("self_check").get<std::string>().find("reproduced exactly") != std::string::npos);
  // The confirming run of the setting in use follows PyTorch too (the fraction is the same
  // whether the config or the call sets it).
  bool in_use_checked = false;
  for (const auto& sc : doc.at("scenarios"))
    for (const auto& c : sc.at("cases"))
      if (c.at("id") == "config=,memory_fraction=0.9" && sc.at("name") == "tune-allocator-confirm")
        in_use_checked = c.at("info").at("pytorch_decisions").at("checked") == true;
  CHECK(in_use_checked);
}

}  // namespace pinbench::allocator_tune_test
