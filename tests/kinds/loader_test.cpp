// The loader engine on the host backend: metrics and their sample counts, the prefetch bound,
// verification, the batches/epochs caps, faults as case results, and the verdict.
// No timing thresholds: only counts, bounds and structure are compared.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds/loader/loader_engine.hpp"
#include "kinds_support.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using pinbench::testing::metric_of;

namespace {

std::string loader_doc(const std::string& params, const std::string& matrix = {}) {
  return std::string(R"({"schema": "pinbench.scenario/1", "name": "l", "kind": "loader", )") +
         R"("params": )" + params + ", " + (matrix.empty() ? "" : R"("matrix": )" + matrix + ", ") +
         R"("sampling": {"warmup": 0, "min_samples": 2, "max_samples": 2, "min_time": "0", "timeout": "20s"}})";
}

result::run_result run_loader_text(const std::string& text) {
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.seed = 3;
  return run::run_scenarios(run::make_plan({scenario::parse_scenario(text, "test.json")}, settings),
                            *dev, {});
}

// A small dataset: 100 samples of 1 KiB, batches of 8 (the last one partial), cheap work.
const std::string k_small_dataset =
    R"("dataset": {"samples": 100, "sample_bytes": "1KiB", "cpu_per_sample": "2us"}, "batch_size": 8)";

}  // namespace

TEST_CASE("loader: every worker count and pin stage delivers a verified run", "[bench][loader]") {
  const auto r =
      run_loader_text(loader_doc("{" + k_small_dataset + R"(, "compute_per_batch": "50us"})",
                                 R"({"num_workers": [0, 1, 3], "pin_memory": [false, true],
                                  "pin_mode": ["per_batch", "ring"]})"));
  REQUIRE(r.scenarios.size() == 1);
  const auto& cases = r.scenarios[0].cases;
  REQUIRE(cases.size() == 12);
  for (const auto& c : cases) {
    INFO(c.id << ": " << c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
    CHECK(c.extra.at("steps_per_run") == 13);  // 100 / 8, rounded up
    // Per run: one sample each; per step: 13 per run.
    CHECK(metric_of(c, "samples_per_s").samples.size() == 2);
    CHECK(metric_of(c, "data_wait").samples.size() == 26);
    CHECK(metric_of(c, "h2d_time").samples.size() == 26);
    CHECK(metric_of(c, "compute_time").samples.size() == 26);
    for (double busy : metric_of(c, "gpu_busy").samples) {
      CHECK(busy > 0);
      CHECK(busy <= 1);
    }
    for (double sps : metric_of(c, "samples_per_s").samples) CHECK(sps > 0);
    // The prefetch bound, as PyTorch counts it.
    const int workers = c.params.at("num_workers").get<int>();
    const double bound = workers == 0 ? 1 : 2.0 * workers;
    for (double seen : metric_of(c, "max_outstanding").samples) CHECK(seen <= bound);
    const bool pinned = c.params.at("pin_memory").get<bool>();
    CHECK((c.find("pin_time") != nullptr) == pinned);
    if (pinned) {
      CHECK(metric_of(c, "pin_time").samples.size() == 26);
      CHECK(metric_of(c, "peak_pinned_bytes").samples.at(0) > 0);
      CHECK(c.extra.at("pinned_pool").at("mode") == c.params.at("pin_mode"));
    }
  }
  CHECK_FALSE(r.scenarios[0].verdict.empty());
}

TEST_CASE("loader: batches caps a run, epochs repeat it, drop_last drops the partial batch",
          "[bench][loader]") {
  SECTION("batches") {
    const auto r =
        run_loader_text(loader_doc("{" + k_small_dataset + R"(, "batches": 5, "num_workers": 2})"));
    const auto& c = r.scenarios[0].cases.at(0);
    INFO(c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("steps_per_run") == 5);
    CHECK(metric_of(c, "step_time").samples.size() == 10);
    CHECK(c.extra.at("verified") == true);
  }
  SECTION("epochs, shuffled") {
    const auto r = run_loader_text(
        loader_doc("{" + k_small_dataset + R"(, "epochs": 3, "shuffle": true, "num_workers": 2})"));
    const auto& c = r.scenarios[0].cases.at(0);
    INFO(c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("steps_per_run") == 39);
    CHECK(c.extra.at("verified") == true);
  }
  SECTION("epochs: process workers start at every epoch, or once per run when persistent") {
    const auto r = run_loader_text(loader_doc(
        "{" + k_small_dataset + R"(, "epochs": 3, "num_workers": 2, "worker_method": "process"})",
        R"({"persistent_workers": [false, true]})"));
    REQUIRE(r.scenarios[0].cases.size() == 2);
    for (const auto& c : r.scenarios[0].cases) {
      INFO(c.id << ": " << c.message);
      REQUIRE(c.status == result::case_status::ok);
      CHECK(c.extra.at("verified") == true);
      const bool persistent = c.params.at("persistent_workers").get<bool>();
      // Every timed run is a training of 3 epochs: a persistent pool is kept across its epochs,
      // and the next run starts its own.
      for (double starts : metric_of(c, "worker_starts").samples)
        CHECK(starts == (persistent ? 1 : 3));
    }
  }
  SECTION("drop_last") {
    const auto r = run_loader_text(
        loader_doc("{" + k_small_dataset + R"(, "drop_last": true, "num_workers": 2})"));
    const auto& c = r.scenarios[0].cases.at(0);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("steps_per_run") == 12);
  }
  SECTION("no compute: no gpu_busy") {
    const auto r =
        run_loader_text(loader_doc("{" + k_small_dataset + R"(, "compute_per_batch": "0us"})"));
    const auto& c = r.scenarios[0].cases.at(0);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.find("gpu_busy") == nullptr);
    CHECK(c.find("compute_time") == nullptr);
    CHECK(r.scenarios[0].verdict.rfind("fastest: ", 0) == 0);
  }
  SECTION("from a file, cold") {
    const auto r = run_loader_text(
        loader_doc("{" + k_small_dataset.substr(0, k_small_dataset.find('}')) +
                   R"(, "source": "file", "cache": "cold"}, "batch_size": 8, "num_workers": 2})"));
    const auto& c = r.scenarios[0].cases.at(0);
    INFO(c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
  }
}

TEST_CASE("loader: faults are case results and the run goes on", "[bench][loader]") {
  SECTION("a worker that throws") {
    const auto r =
        run_loader_text(loader_doc("{" + k_small_dataset.substr(0, k_small_dataset.find('}')) +
                                       R"(, "fail_at_sample": 42}, "batch_size": 8})",
                                   R"({"num_workers": [0, 2]})"));
    const auto& cases = r.scenarios[0].cases;
    REQUIRE(cases.size() == 2);
    for (const auto& c : cases) {
      INFO(c.id);
      CHECK(c.status == result::case_status::error);
      CHECK(c.message.find("sample 42") != std::string::npos);
    }
    CHECK(cases[1].message.find("worker") != std::string::npos);
    CHECK(r.any_failed());
  }
  SECTION("pinned memory beyond pinned_limit") {
    const auto r =
        run_loader_text(loader_doc("{" + k_small_dataset + R"(, "pinned_limit": "4KiB"})",
                                   R"({"pin_mode": ["per_batch", "ring"]})"));
    for (const auto& c : r.scenarios[0].cases) {
      INFO(c.id);
      CHECK(c.status == result::case_status::error);
      CHECK(c.message.find("pinned_limit") != std::string::npos);
      CHECK(c.message.find("RLIMIT_MEMLOCK") != std::string::npos);
      CHECK(c.message.find("pin_mode") != std::string::npos);
    }
  }
}

TEST_CASE("loader: a ring smaller than the prefetch bound is refused at load time",
          "[bench][loader]") {
  CHECK_THROWS_WITH(
      scenario::expand(scenario::parse_scenario(
          loader_doc(
              R"({"num_workers": 3, "prefetch_factor": 2, "pin_mode": "ring", "ring_slots": 6})"),
          "t.json")),
      Catch::Contains("params.ring_slots") && Catch::Contains("at least 7"));
  CHECK_NOTHROW(scenario::expand(scenario::parse_scenario(
      loader_doc(
          R"({"num_workers": 3, "prefetch_factor": 2, "pin_mode": "ring", "ring_slots": 7})"),
      "t.json")));
}

TEST_CASE("loader: the verdict names the idlest and the busiest case", "[bench][loader]") {
  result::scenario_result s;
  s.kind = "loader";
  const auto add = [&](const std::string& id, double sps, double busy) {
    result::case_result c;
    c.id = id;
    c.add("samples_per_s", "samples/s", result::direction::higher).samples = {sps, sps};
    c.add("gpu_busy", "fraction", result::direction::higher).samples = {busy, busy};
    s.cases.push_back(c);
  };
  add("num_workers=0", 500, 0.37);
  add("num_workers=4", 1500, 0.97);
  CHECK(kinds::loader::verdict(s) ==
        "data-bound at num_workers=0: the device waited 63% of the time; num_workers=4 reaches "
        "97% busy (1500 samples/s)");
  s.cases.erase(s.cases.begin());
  CHECK(kinds::loader::verdict(s).rfind("compute-bound", 0) == 0);
  s.cases[0].status = result::case_status::error;
  CHECK(kinds::loader::verdict(s).empty());
}
