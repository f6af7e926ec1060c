// The transfer engine on the host backend: the claims of the seed articles, as behaviour.
// Margins are wide on purpose (shared 2-core machines): each check compares quantities that
// differ by an order of magnitude when the semantics are right.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds/transfer/transfer_verdict.hpp"
#include "kinds_support.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using pinbench::testing::find_case;

namespace {

result::run_result run_transfer_text(const std::string& text,
                                     std::vector<scenario::override_spec> sets = {}) {
  const auto s = scenario::parse_scenario(text, "test.json");
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.overrides = std::move(sets);
  return run::run_scenarios(run::make_plan({s}, settings), *dev, {});
}

double median_of(const result::case_result& c, const std::string& metric) {
  const auto* m = c.find(metric);
  REQUIRE(m != nullptr);
  return m->summarize().median;
}

const char* k_transfer_sampling = R"("sampling": {"warmup": 1, "min_samples": 5, "max_samples": 20,
                               "min_time": "0", "timeout": "2s"})";

}  // namespace

// What a copy costs the caller, how much compute hides, what pinning on the fly costs: figures
// that depend on the machine's load, so they are claims of the scenarios' verdicts
// (scenarios/transfer-*.json, the quick suite), judged from their medians, not asserted here.
// The semantics under them (a pinned copy only enqueues, a pageable one holds the caller, a copy
// stream does not wait for a busy compute stream) are asserted without a clock, behind gates, in
// tests/device/host_backend_test.cpp. Here: every figure is there, sane, and from verified data.

TEST_CASE("non_blocking and blocking copies report the caller's time and the copy's",
          "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "4MiB"},
      "matrix": {"memory": ["pinned", "pageable"], "mode": ["non_blocking", "blocking"]}, )") +
                                   k_transfer_sampling + "}");
  REQUIRE(r.scenarios.at(0).cases.size() == 4);
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
    CHECK_FALSE(c.extra.contains("backend"));  // the run records its backend once
    for (const char* metric : {"bandwidth", "copy_time", "host_call_time"}) {
      INFO(metric);
      const auto* m = c.find(metric);
      REQUIRE(m != nullptr);
      CHECK(m->samples.size() >= 5);
      CHECK(std::all_of(m->samples.begin(), m->samples.end(), [](double v) { return v > 0; }));
    }
    if (c.params.at("mode") == "blocking") {
      CHECK_THAT(c.extra.at("timing").get<std::string>(), Catch::StartsWith("host clock"));
      // The caller's time is the copy's time there: the window that times the copies holds
      // every call, so no sample's calls can outlast it.
      const auto& held = c.find("host_call_time")->samples;
      const auto& copy = c.find("copy_time")->samples;
      REQUIRE(held.size() == copy.size());
      for (std::size_t i = 0; i < held.size(); ++i) CHECK(held[i] <= copy[i]);
    }
  }
  // The verdict speaks of the non_blocking pair, on the backend that measured it.
  CHECK_THAT(r.scenarios.at(0).verdict, Catch::StartsWith("non_blocking 4 MiB h2d: the caller is "
                                                          "held ") &&
                                            Catch::EndsWith("(host backend)"));
}

TEST_CASE("with overlap_compute every case reports how much of the copy compute hid",
          "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "4MiB", "mode": "non_blocking",
      "overlap_compute": "5ms"}, "matrix": {"memory": ["pinned", "pageable"]}, )") +
                                   k_transfer_sampling + "}");
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
    const auto* overlap = c.find("overlap");
    REQUIRE(overlap != nullptr);
    CHECK(overlap->unit == "fraction");
    CHECK(std::all_of(overlap->samples.begin(), overlap->samples.end(),
                      [](double v) { return v >= 0 && v <= 1; }));
    CHECK(c.extra.at("copy_alone_ns").get<double>() > 0);
    CHECK(c.extra.at("compute_alone_ns").get<double>() >= 5e6);  // compute runs at least that
  }
  CHECK_THAT(r.scenarios.at(0).verdict, Catch::StartsWith("compute hides "));
}

TEST_CASE("every case reports link_fraction over a host memcpy of its size, sample by sample",
          "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "1MiB", "mode": "non_blocking"},
      "matrix": {"memory": ["pinned", "pageable"], "direction": ["h2d", "bidirectional"]}, )") +
                                   k_transfer_sampling + "}");
  REQUIRE(r.scenarios.at(0).cases.size() == 4);
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id);
    REQUIRE(c.status == result::case_status::ok);
    const auto& ceiling = c.extra.at("link_ceiling");
    const double gbps = ceiling.at("gbps").get<double>();
    CHECK(gbps > 0);
    const auto source = ceiling.at("source").get<std::string>();
    CHECK_THAT(source, Catch::StartsWith("host memcpy of 1 MiB measured in this run: "));
    // Both directions share the host's memory bus: one memcpy's ceiling, not two.
    if (c.id.find("bidirectional") != std::string::npos)
      CHECK_THAT(source, Catch::EndsWith("both directions share the memory bus: one memcpy's, "
                                         "not two"));
    const auto* fraction = c.find("link_fraction");
    const auto* bandwidth = c.find("bandwidth");
    REQUIRE(fraction != nullptr);
    REQUIRE(bandwidth != nullptr);
    CHECK(fraction->unit == "fraction");
    CHECK(fraction->better == result::direction::none);  // shown, never gated
    // One per bandwidth sample, and that sample over the ceiling: traceable to the samples.
    REQUIRE(fraction->samples.size() == bandwidth->samples.size());
    for (std::size_t i = 0; i < fraction->samples.size(); ++i) {
      CHECK(fraction->samples[i] == Approx(bandwidth->samples[i] / gbps));
      CHECK(fraction->samples[i] > 0);
    }
  }
}

TEST_CASE("pinning on the fly reports the time spent pinning, a pinned source none",
          "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "4MiB"},
      "matrix": {"memory": ["pinned", "pin_on_the_fly"], "direction": ["h2d", "d2h"]}, )") +
                                   k_transfer_sampling + "}");
  for (const auto* dir : {"h2d", "d2h"}) {
    INFO(dir);
    const auto& pinned = find_case(r, std::string("memory=pinned,direction=") + dir);
    const auto& otf = find_case(r, std::string("memory=pin_on_the_fly,direction=") + dir);
    REQUIRE(otf.status == result::case_status::ok);
    CHECK(otf.extra.at("verified") == true);
    REQUIRE(otf.find("pin_time") != nullptr);
    CHECK(median_of(otf, "pin_time") > 0);
    CHECK(pinned.find("pin_time") == nullptr);
  }
  CHECK_THAT(r.scenarios.at(0).verdict, Catch::Contains("pin_on_the_fly 4 MiB "));
}

TEST_CASE("every memory kind and direction moves intact data", "[bench][transfer][slow]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "3MiB", "copies_per_sample": 2},
      "matrix": {"memory": ["pageable", "pinned", "pinned_wc", "registered", "pin_on_the_fly"],
                 "direction": ["h2d", "d2h", "bidirectional"],
                 "mode": ["blocking", "non_blocking"]}, )") +
                                   k_transfer_sampling + "}");
  REQUIRE(r.scenarios.at(0).cases.size() == 30);
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id << ": " << c.message);
    CHECK(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
    CHECK(c.find("bandwidth")->samples.size() >= 5);
  }
}

TEST_CASE("a failing case is recorded and the run goes on", "[bench][transfer]") {
  // 1 TiB cannot be had on the host backend's capacity: that case fails, the next one runs.
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "matrix": {"bytes": ["1TiB", "64KiB"]}, )") +
                                   k_transfer_sampling + "}");
  const auto& cases = r.scenarios.at(0).cases;
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].status == result::case_status::error);
  CHECK_FALSE(cases[0].message.empty());
  CHECK(cases[1].status == result::case_status::ok);
  CHECK(r.any_failed());
}

TEST_CASE("an interrupt keeps what was measured", "[bench][transfer]") {
  request_interrupt();
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "matrix": {"bytes": ["64KiB", "128KiB"]}, )") +
                                   k_transfer_sampling + "}");
  clear_interrupt();
  CHECK(r.interrupted);
  CHECK(r.scenarios.at(0).cases.empty());
}

TEST_CASE("copies of 1 MiB or less are timed in batches of 16, the batch is in the result",
          "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"mode": "non_blocking"},
      "matrix": {"memory": ["pinned", "pageable"], "bytes": ["4KiB", "1MiB", "2MiB"]}, )") +
                                   k_transfer_sampling + "}");
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id << ": " << c.message);
    REQUIRE(c.status == result::case_status::ok);
    const bool small = c.params.at("bytes") != "2MiB";
    CHECK(c.extra.at("copies_per_sample") == (small ? 16 : 1));
    const auto timing = c.extra.at("timing").get<std::string>();
    CHECK(timing.find(small ? "a batch of 16 copies" : "one copy") != std::string::npos);
    for (double bw : c.find("bandwidth")->samples) {
      CHECK(std::isfinite(bw));
      CHECK(bw > 0);
    }
    // copy_time is per copy, not per batch: bandwidth x copy_time = bytes.
    const double bytes = small ? (c.params.at("bytes") == "4KiB" ? 4096.0 : 1048576.0) : 2097152.0;
    const auto& bw = c.find("bandwidth")->samples;
    const auto& ct = c.find("copy_time")->samples;
    CHECK(bw.front() * ct.front() == Approx(bytes).epsilon(1e-9));
  }
  // An explicit copies_per_sample wins over the automatic batch.
  const auto one = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "4KiB", "copies_per_sample": 1}, )") +
                                     k_transfer_sampling + "}");
  CHECK(one.scenarios.at(0).cases.at(0).extra.at("copies_per_sample") == 1);
}

TEST_CASE("a batch larger than a gate may hold is measured in gated chunks", "[bench][transfer]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "64KiB", "memory": "pinned",
      "copies_per_sample": 150}, )") +
                                   k_transfer_sampling + "}");
  const auto& c = r.scenarios.at(0).cases.at(0);
  INFO(c.message);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(c.extra.at("copies_per_sample") == 150);
  CHECK(c.extra.at("gated_chunks") ==
        (150 + device::max_copies_behind_gate - 1) / device::max_copies_behind_gate);
  CHECK(c.extra.at("verified") == true);
  CHECK(c.extra.at("timing").get<std::string>().find("gated chunks") != std::string::npos);
}

TEST_CASE("overlap cases refuse more copies than one gate may hold, at load", "[bench][transfer]") {
  const auto s = scenario::parse_scenario(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"memory": "pinned", "overlap_compute": "1ms",
      "copies_per_sample": 65}})",
                                          "t.json");
  try {
    (void)scenario::expand(s, {});
    FAIL("expected an input error");
  } catch (const input_error& e) {
    const std::string what = e.what();
    CHECK(what.find("t.json") != std::string::npos);
    CHECK(what.find("params.copies_per_sample") != std::string::npos);
    CHECK(what.find("at most 64") != std::string::npos);
  }
  // Pageable sources are not gated, so there it is allowed.
  const auto pageable = scenario::parse_scenario(R"({"schema": "pinbench.scenario/1",
      "name": "t", "kind": "transfer", "params": {"memory": "pageable", "overlap_compute": "1ms",
      "copies_per_sample": 65}})",
                                                 "t.json");
  CHECK(scenario::expand(pageable, {}).size() == 1);
}

TEST_CASE("a gate that times out voids its sample", "[bench][transfer]") {
  const auto s = scenario::parse_scenario(std::string(R"({"schema": "pinbench.scenario/1",
      "name": "t", "kind": "transfer", "params": {"bytes": "64KiB", "memory": "pinned"}, )") +
                                              k_transfer_sampling + "}",
                                          "t.json");
  device::backend_options opts;
  opts.host_gate_timeouts = 2;
  auto dev = device::platform::host(opts).open(0);
  const auto r = run::run_scenarios(run::make_plan({s}, {}), *dev, {});
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(c.extra.at("void_samples") == 2);

  opts.host_gate_timeouts = 1000;
  auto broken = device::platform::host(opts).open(0);
  const auto failed = run::run_scenarios(run::make_plan({s}, {}), *broken, {});
  CHECK(failed.scenarios.at(0).cases.at(0).status == result::case_status::error);
  CHECK(failed.any_failed());
}

TEST_CASE("run --repeat measures every case in each round, samples keep their round",
          "[bench][transfer][rounds]") {
  const auto s = scenario::parse_scenario(
      std::string(R"({"schema": "pinbench.scenario/1", "name": "t", "kind": "transfer",
      "params": {"bytes": "64KiB", "mode": "non_blocking"},
      "matrix": {"memory": ["pinned", "pageable"]},
      "sampling": {"warmup": 0, "min_samples": 3, "max_samples": 3, "min_time": "0",
                   "timeout": "2s"}})"),
      "test.json");
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.repeat = 3;
  run::run_options o;
  std::vector<std::string> order;
  o.on_case = [&](std::size_t, std::size_t total, const std::string&, const std::string& id) {
    CHECK(total == 6);
    order.push_back(id);
  };
  const auto r = run::run_scenarios(run::make_plan({s}, settings), *dev, o);
  CHECK(r.repeat == 3);
  REQUIRE(order.size() == 6);
  REQUIRE(r.scenarios.size() == 1);
  REQUIRE(r.scenarios[0].cases.size() == 2);
  // The result keeps the declared order, whatever order the rounds ran in.
  CHECK(r.scenarios[0].cases[0].id == "memory=pinned");
  for (const auto& c : r.scenarios[0].cases) {
    INFO(c.id);
    CHECK(c.status == result::case_status::ok);
    CHECK(c.extra.at("rounds") == 3);
    const auto* bw = c.find("bandwidth");
    REQUIRE(bw != nullptr);
    CHECK(bw->samples.size() == 9);
    CHECK(bw->rounds == std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1, 2, 2, 2});
    CHECK_FALSE(bw->deterministic);
  }
}

namespace {

// A transfer case as the engine records one, with one median per metric.
result::case_result transfer_case(const std::string& memory, const nlohmann::json& others,
                                  const std::map<std::string, double>& medians) {
  result::case_result c;
  c.id = "memory=" + memory;
  c.params = others;
  c.params["memory"] = memory;
  c.extra = {{"bytes_per_copy", 32u << 20}};
  for (const auto& [name, value] : medians)
    c.add(name, "", result::direction::none).samples = {value, value, value};
  return c;
}

}  // namespace

TEST_CASE("transfer: the verdict judges pinning from the medians of cases that differ in memory",
          "[transfer]") {
  const nlohmann::json async = {{"direction", "h2d"}, {"mode", "non_blocking"}};
  result::scenario_result s;
  SECTION("the caller's time, non_blocking") {
    s.cases = {transfer_case("pinned", async,
                             {{"bandwidth", 20}, {"copy_time", 1e6}, {"host_call_time", 1e4}}),
               transfer_case("pageable", async,
                             {{"bandwidth", 9}, {"copy_time", 2e6}, {"host_call_time", 1.7e6}})};
    CHECK(kinds::transfer::verdict(s, device::platform_kind::host) ==
          "non_blocking 32 MiB h2d: the caller is held 1% of a pinned copy, 85% of a pageable one: "
          "only pinned memory leaves the host free (host backend)");
    // Blocking cases say nothing of it: the caller is held by design there.
    for (auto& c : s.cases) c.params["mode"] = "blocking";
    CHECK_THAT(kinds::transfer::verdict(s, device::platform_kind::host),
               Catch::StartsWith("fastest: memory=pinned at 20.00 GB/s"));
  }
  SECTION("a gap below 20 points is no clear difference") {
    s.cases = {transfer_case("pinned", async,
                             {{"bandwidth", 20}, {"copy_time", 1e6}, {"host_call_time", 5e5}}),
               transfer_case("pageable", async,
                             {{"bandwidth", 19}, {"copy_time", 1e6}, {"host_call_time", 6e5}})};
    CHECK_THAT(kinds::transfer::verdict(s, device::platform_kind::host),
               Catch::Contains("50% of a pinned copy, 60% of a "
                               "pageable one: no clear difference"));
  }
  SECTION("overlap with compute") {
    const auto with = [&](const std::string& memory, double overlap) {
      return transfer_case(
          memory, async,
          {{"bandwidth", 10}, {"copy_time", 1e6}, {"host_call_time", 1e3}, {"overlap", overlap}});
    };
    s.cases = {with("pageable", 0.33), with("pinned", 0.97), with("registered", 0.9)};
    CHECK(kinds::transfer::verdict(s, device::platform_kind::host) ==
          "compute hides 97% of a pinned 32 MiB h2d copy, 33% of a pageable one: pin to overlap "
          "copies with compute (host backend)");
    s.cases[0].add("overlap", "", result::direction::none).samples.assign(3, 0.9);
    CHECK_THAT(kinds::transfer::verdict(s, device::platform_kind::host),
               Catch::Contains("no clear gain from pinning here"));
  }
  SECTION("pinning on the fly, the largest copies speaking") {
    const auto with = [&](const std::string& memory, std::uint64_t bytes, double gbps,
                          double pin_ns) {
      std::map<std::string, double> m{
          {"bandwidth", gbps}, {"copy_time", 1e6}, {"host_call_time", 1e6}};
      if (pin_ns > 0) m["pin_time"] = pin_ns;
      auto c = transfer_case(memory, {{"direction", "h2d"}, {"bytes", format_bytes(bytes)}}, m);
      c.extra["bytes_per_copy"] = bytes;
      return c;
    };
    s.cases = {with("pinned", 1u << 20, 10, 0), with("pin_on_the_fly", 1u << 20, 9, 5e4),
               with("pinned", 32u << 20, 20, 0), with("pin_on_the_fly", 32u << 20, 8, 2.5e6)};
    CHECK(kinds::transfer::verdict(s, device::platform_kind::host) ==
          "pin_on_the_fly 32 MiB h2d: 8.00 GB/s, 0.40x a pinned source's (2.50 ms per copy spent "
          "pinning): pin the buffer once, not per copy (host backend)");
  }
  SECTION("failed cases and cases without figures give no verdict") {
    s.cases = {transfer_case("pinned", async, {{"bandwidth", 20}})};
    CHECK(kinds::transfer::verdict(s, device::platform_kind::host).empty());
    s.cases = {transfer_case("pinned", async,
                             {{"bandwidth", 20}, {"copy_time", 1e6}, {"host_call_time", 1e4}})};
    s.cases[0].status = result::case_status::error;
    CHECK(kinds::transfer::verdict(s, device::platform_kind::host).empty());
  }
}
