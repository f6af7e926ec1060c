// What the allocator engine records for the HTML report: the timeline of allocated vs reserved
// bytes (bounded, peaks kept) and the segment map at peak reserved memory. Counters only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds_support.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using nlohmann::json;
using pinbench::testing::counter;

namespace {

result::case_result run_one(const std::string& params) {
  const std::string text =
      R"({"schema": "pinbench.scenario/1", "name": "a", "kind": "allocator", "params": )" + params +
      R"(, "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1, "min_time": "0",
                        "timeout": "10s"}})";
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.seed = 3;
  const auto r = run::run_scenarios(
      run::make_plan({scenario::parse_scenario(text, "t.json")}, settings), *dev, {});
  REQUIRE(r.scenarios.size() == 1);
  REQUIRE(r.scenarios[0].cases.size() == 1);
  return r.scenarios[0].cases[0];
}

std::int64_t column_max(const json& points, std::size_t column) {
  std::int64_t best = 0;
  for (const auto& p : points) best = std::max(best, p.at(column).get<std::int64_t>());
  return best;
}

}  // namespace

TEST_CASE("an allocator case carries its timeline: every call, peaks kept, iterations marked",
          "[bench][allocator][report]") {
  const auto c = run_one(R"({"layers": 6, "activation_bytes": "4MiB", "parameter_bytes": "1MiB",
                              "iterations": 5, "batch_sizes": [16, 64, 32],
                              "empty_cache_every": 2})");
  REQUIRE(c.status == result::case_status::ok);
  REQUIRE(c.extra.contains("timeline"));
  const auto& t = c.extra["timeline"];
  const auto& ops = c.extra.at("ops");
  CHECK(t["columns"] == json{"call", "allocated_bytes", "reserved_bytes"});
  // One point per allocator call while they fit: alloc, free, empty_cache (an OOM counts too).
  const auto calls = ops["allocs"].get<std::uint64_t>() + ops["frees"].get<std::uint64_t>() +
                     ops["ooms"].get<std::uint64_t>() +
                     ops["empty_cache_calls"].get<std::uint64_t>();
  CHECK(t["calls"] == calls);
  CHECK(t["calls_per_point"] == 1);
  CHECK(t["points"].size() == calls);
  CHECK(t["iterations"].size() == 5);
  // The timeline's highs are the counters' peaks.
  CHECK(static_cast<double>(column_max(t["points"], 1)) == counter(c, "allocated_bytes.all.peak"));
  CHECK(static_cast<double>(column_max(t["points"], 2)) == counter(c, "reserved_bytes.all.peak"));
  for (const auto& p : t["points"]) CHECK(p[2].get<std::int64_t>() >= p[1].get<std::int64_t>());
}

TEST_CASE("a long workload's timeline stays within 500 points and keeps its peak",
          "[bench][allocator][report]") {
  const auto c = run_one(R"({"workload": "random", "count": 20000, "max_bytes": "4MiB",
                              "device_memory": "1GiB"})");
  REQUIRE(c.status == result::case_status::ok);
  const auto& t = c.extra.at("timeline");
  const auto per = t["calls_per_point"].get<std::uint64_t>();
  CHECK(t["points"].size() <= 500);
  CHECK(t["points"].size() >= 250);  // halved only when full
  CHECK(per > 1);
  CHECK((per & (per - 1)) == 0);  // runs double
  CHECK(t["calls"].get<std::uint64_t>() > 500);
  CHECK(static_cast<double>(column_max(t["points"], 2)) == counter(c, "reserved_bytes.all.peak"));
  CHECK(static_cast<double>(column_max(t["points"], 1)) == counter(c, "allocated_bytes.all.peak"));
  // Points start at multiples of the run length, in order.
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i < t["points"].size(); ++i) {
    const auto first = t["points"][i][0].get<std::uint64_t>();
    CHECK(first % per == 0);
    if (i > 0) CHECK(first > previous);
    previous = first;
  }
  // The random pattern marks an iteration every 1000 operations: few enough to draw.
  CHECK(t["iterations"].size() == c.extra.at("ops").at("iterations").get<std::size_t>());
  CHECK(t["iterations"].size() == 20);
}

TEST_CASE("the segment map at peak covers every segment with its blocks",
          "[bench][allocator][report]") {
  const auto c = run_one(R"({"layers": 6, "activation_bytes": "3MiB", "parameter_bytes": "300KiB",
                              "iterations": 4, "batch_sizes": [16, 64, 32]})");
  REQUIRE(c.status == result::case_status::ok);
  REQUIRE(c.extra.contains("segments_at_peak"));
  const auto& m = c.extra["segments_at_peak"];
  CHECK(static_cast<double>(m["reserved_bytes"].get<std::int64_t>()) ==
        counter(c, "reserved_bytes.all.peak"));
  const auto& segments = m["segments"];
  REQUIRE_FALSE(segments.empty());
  CHECK(m["segments_total"] == segments.size());
  std::uint64_t reserved = 0, allocated = 0, previous_end = 0;
  bool small = false, large = false;
  for (const auto& s : segments) {
    const auto size = s["size"].get<std::uint64_t>();
    reserved += size;
    allocated += s["allocated_bytes"].get<std::uint64_t>();
    CHECK(s["offset"].get<std::uint64_t>() >= previous_end);  // address order, no overlap
    previous_end = s["offset"].get<std::uint64_t>() + size;
    small = small || s["pool"] == "small";
    large = large || s["pool"] == "large";
    // Blocks tile the segment, neighbours of one state joined.
    std::uint64_t at = 0, active = 0;
    std::string last_state;
    for (const auto& b : s["blocks"]) {
      CHECK(b["offset"].get<std::uint64_t>() == at);
      at += b["size"].get<std::uint64_t>();
      CHECK(b["state"] != last_state);
      last_state = b["state"].get<std::string>();
      if (last_state == "active_allocated") active += b["size"].get<std::uint64_t>();
    }
    CHECK(at == size);
    CHECK(active == s["allocated_bytes"].get<std::uint64_t>());
  }
  CHECK(reserved == m["reserved_bytes"].get<std::uint64_t>());
  CHECK(allocated == m["allocated_bytes"].get<std::uint64_t>());
  CHECK(small);  // 300 KiB parameters come from the small pool
  CHECK(large);
  CHECK(segments[0]["offset"] == 0);  // offsets from the lowest segment
}

TEST_CASE("timeline and segment map are the same on every run", "[bench][allocator][report]") {
  const std::string params = R"({"workload": "random", "count": 3000, "max_bytes": "2MiB",
                                  "device_memory": "256MiB"})";
  const auto a = run_one(params), b = run_one(params);
  CHECK(a.extra.at("timeline") == b.extra.at("timeline"));
  CHECK(a.extra.at("segments_at_peak") == b.extra.at("segments_at_peak"));
}
