// The transfer engine on the host backend: the claims of the seed articles, as behaviour.
// Margins are wide on purpose (shared 2-core machines): each check compares quantities that
// differ by an order of magnitude when the semantics are right.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "device/backend.hpp"
#include "kinds_support.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using pinbench::testing::find_case;

namespace {

result::run_result run_transfer_text(const std::string& text,
                                     std::vector<scenario::override_spec> sets = {}) {
  const auto s = scenario::parse_scenario(text, "test.json");
  auto dev = device::make_backend("host");
  run::run_options o;
  o.overrides = std::move(sets);
  return run::run_scenarios({s}, *dev, o);
}

double median_of(const result::case_result& c, const std::string& metric) {
  const auto* m = c.find(metric);
  REQUIRE(m != nullptr);
  return m->summarize().median;
}

const char* k_transfer_sampling = R"("sampling": {"warmup": 1, "min_samples": 5, "max_samples": 20,
                               "min_time": "0", "timeout": "2s"})";

}  // namespace

TEST_CASE("pinned non_blocking copies release the caller at once; pageable ones do not",
          "[bench][transfer][timing]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "16MiB", "mode": "non_blocking"},
      "matrix": {"memory": ["pinned", "pageable"]}, )") +
                                   k_transfer_sampling + "}");
  const auto& pinned = find_case(r, "memory=pinned");
  const auto& pageable = find_case(r, "memory=pageable");
  REQUIRE(pinned.status == result::case_status::ok);
  REQUIRE(pageable.status == result::case_status::ok);
  CHECK(pinned.extra.at("verified") == true);
  CHECK(pageable.extra.at("verified") == true);
  // Enqueueing takes microseconds; a 16 MiB copy takes milliseconds.
  CHECK(median_of(pinned, "host_call_time") < median_of(pinned, "copy_time") / 10);
  // Staging through the bounce buffer holds the caller for most of the copy.
  CHECK(median_of(pageable, "host_call_time") > median_of(pageable, "copy_time") * 0.3);
  CHECK(median_of(pinned, "bandwidth") > 0);
}

TEST_CASE("blocking copies report the time the caller is held", "[bench][transfer][timing]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "8MiB", "mode": "blocking", "memory": "pinned"}, )") +
                                   k_transfer_sampling + "}");
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(median_of(c, "host_call_time") == Approx(median_of(c, "copy_time")).epsilon(0.05));
}

TEST_CASE("compute overlaps a pinned non_blocking copy, not a pageable one",
          "[bench][transfer][timing]") {
  if (std::thread::hardware_concurrency() < 2) {
    WARN("one CPU: the host backend cannot overlap copy and compute here");
    return;
  }
  // Overlap on the host backend needs two cores at once (engine thread and compute thread).
  // Another process on a shared 2-core machine can take one at any moment, which hides overlap
  // that is there (pinned) or fakes some that is not (pageable, timed on the host clock). So up
  // to three attempts, each kind judged by its best one: pinned can overlap, pageable cannot.
  double pinned_overlap = 0, pageable_overlap = 1;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
        "kind": "transfer", "params": {"bytes": "16MiB", "mode": "non_blocking",
        "overlap_compute": "20ms"}, "matrix": {"memory": ["pinned", "pageable"]}, )") +
                                     k_transfer_sampling + "}");
    const auto& pinned = find_case(r, "memory=pinned");
    const auto& pageable = find_case(r, "memory=pageable");
    REQUIRE(pinned.status == result::case_status::ok);
    REQUIRE(pageable.status == result::case_status::ok);
    pinned_overlap = std::max(pinned_overlap, median_of(pinned, "overlap"));
    pageable_overlap = std::min(pageable_overlap, median_of(pageable, "overlap"));
    if (pinned_overlap > 0.5 && pageable_overlap < 0.3) break;  // clear at once: no retry
    WARN("attempt " << attempt + 1 << ": pinned overlap " << median_of(pinned, "overlap")
                    << ", pageable " << median_of(pageable, "overlap"));
  }
  // Seen here on an idle 2-core VM: pinned 0.95-0.98, pageable 0.32-0.36 in every attempt (the
  // host clock counts the engine thread's hand-off as overlap), so the bound on pageable is
  // loose and the claim is carried by the gap between the two.
  CHECK(pinned_overlap > 0.5);
  CHECK(pageable_overlap < 0.5);
  CHECK(pageable_overlap + 0.3 < pinned_overlap);
}

TEST_CASE("pinning on the fly reports its cost and is slower than a pinned source",
          "[bench][transfer][timing]") {
  const auto r = run_transfer_text(std::string(R"({"schema": "pinbench.scenario/1", "name": "t",
      "kind": "transfer", "params": {"bytes": "16MiB"},
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
    CHECK(median_of(otf, "bandwidth") < median_of(pinned, "bandwidth"));
  }
}

TEST_CASE("every memory kind and direction moves intact data", "[bench][transfer]") {
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

TEST_CASE("copies of 1 MiB or less are timed in batches of 16; the batch is in the result",
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
  auto dev = device::make_backend("host", opts);
  const auto r = run::run_scenarios({s}, *dev, {});
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(c.extra.at("void_samples") == 2);

  opts.host_gate_timeouts = 1000;
  auto broken = device::make_backend("host", opts);
  const auto failed = run::run_scenarios({s}, *broken, {});
  CHECK(failed.scenarios.at(0).cases.at(0).status == result::case_status::error);
  CHECK(failed.any_failed());
}

TEST_CASE("run --repeat measures every case in each round; samples keep their round",
          "[bench][transfer][rounds]") {
  const auto s = scenario::parse_scenario(
      std::string(R"({"schema": "pinbench.scenario/1", "name": "t", "kind": "transfer",
      "params": {"bytes": "64KiB", "mode": "non_blocking"},
      "matrix": {"memory": ["pinned", "pageable"]},
      "sampling": {"warmup": 0, "min_samples": 3, "max_samples": 3, "min_time": "0",
                   "timeout": "2s"}})"),
      "test.json");
  auto dev = device::make_backend("host");
  run::run_options o;
  o.repeat = 3;
  std::vector<std::string> order;
  o.on_case = [&](std::size_t, std::size_t total, const std::string&, const std::string& id) {
    CHECK(total == 6);
    order.push_back(id);
  };
  const auto r = run::run_scenarios({s}, *dev, o);
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
