// A PyTorch snapshot replayed as PyTorch made it: from the memory its recording began with, on
// PyTorch's addresses, with PyTorch's releases, checked decision by decision. One fixture per
// situation (tests/data/traces/make_snapshot_pickles.py says what PyTorch's allocator did in each
// and why); each must be reproduced exactly, and the ones that need the new parts must part from
// PyTorch without them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "alloc/config.hpp"
#include "alloc/follow.hpp"
#include "alloc/replay.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/workload.hpp"
#include "core/error.hpp"
#include "test_paths.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace recording_test {

constexpr std::uint64_t one_mib = 1 << 20;
constexpr std::uint64_t fixture_base = 0x7F3A00000000;

std::string snapshot_fixture(const std::string& name) {
  return pinbench::testing::source_dir() + "/tests/data/traces/snapshot-" + name + ".pickle";
}

trace_events read_snapshot(const std::string& name, int device = 0) {
  const auto source = open_trace(snapshot_fixture(name), {.device = device});
  return read_all(*source);
}

// The snapshot's own settings, by the release its format shows.
config own_settings(const std::string& name, int device = 0) {
  const auto facts = read_torch_snapshot_facts(snapshot_fixture(name), device);
  config c = facts.settings.value_or(config{});
  if (facts.format) c.release = facts.format->newest;
  return c;
}

replay_outcome follow_snapshot(const std::string& name, int device = 0) {
  return replay(read_snapshot(name, device), own_settings(name, device), 80ull << 30, std::nullopt,
                follow_pytorch::yes);
}

void check_reproduced_exactly(const replay_outcome& o, std::uint64_t decisions) {
  REQUIRE(o.check);
  INFO(o.check->summary());
  CHECK(o.check->reproduced());
  CHECK(o.check->pytorch == decisions);
  CHECK(o.check->identical == decisions);
  CHECK(o.check->replayed == decisions);
  CHECK_FALSE(o.check->first_placement);
}

}  // namespace recording_test

using namespace recording_test;

TEST_CASE("a recording that began after segments existed replays from its start state",
          "[alloc][recording]") {
  const trace_events t = read_snapshot("start-state");
  REQUIRE(t.recorded);
  const start_state& start = t.recorded->start;
  // S1 (small, 2 MiB) with the 512 KiB block the trace frees; S2 (20 MiB) with the 5 MiB block
  // live at the dump, at an address the trace never touches.
  REQUIRE(start.segments.size() == 2);
  CHECK(start.segments[0].address == fixture_base);
  CHECK(start.segments[0].small);
  REQUIRE(start.segments[0].live.size() == 1);
  CHECK(start.segments[0].live[0].size == 512 * 1024);
  CHECK(start.segments[0].live[0].id >= start_block_ids);
  CHECK(start.segments[1].size == 20 * one_mib);
  REQUIRE(start.segments[1].live.size() == 1);
  CHECK(start.segments[1].live[0].size == 5 * one_mib);
  CHECK(start.segments[1].live[0].id == 0);  // never freed in the trace

  const replay_outcome o = follow_snapshot("start-state");
  check_reproduced_exactly(o, 2);
  CHECK(o.check->start_segments == 2);
  CHECK(o.check->start_blocks == 2);
  CHECK(o.check->summary() ==
        "PyTorch's 2 cudaMalloc/cudaFree decisions reproduced exactly; from the recorded start "
        "state (2 segments, 2 live blocks), 1 empty_cache() call taken from the trace");
  // The start state counts as memory reserved, not as cudaMalloc calls.
  CHECK(o.stats.num_device_alloc == 1);
  CHECK(o.stats.reserved_bytes.all.peak == static_cast<std::int64_t>(52 * one_mib));

  // The same requests from nothing: the 256 KiB request opens a segment PyTorch never made.
  const trace_events bare{t.events, nullptr};
  const replay_outcome from_nothing = replay(bare, own_settings("start-state"), 80ull << 30, {});
  CHECK(from_nothing.stats.num_device_alloc > 1);
}

TEST_CASE("releases PyTorch made are made again: empty_cache(), and the retry path's",
          "[alloc][recording]") {
  const trace_events t = read_snapshot("releases");
  REQUIRE(t.recorded);
  // The run with the program's empty_cache() stack is an empty_cache event; the run before
  // a segment_alloc, whose stack shows the allocator's malloc, the retry path's.
  CHECK(t.recorded->empty_cache_calls == 1);
  CHECK(t.recorded->retry_releases == 1);
  CHECK(std::count_if(t.events.begin(), t.events.end(),
                      [](const event& e) { return e.op == event::kind::empty_cache; }) == 1);
  const replay_outcome o = follow_snapshot("releases");
  check_reproduced_exactly(o, 6);
  CHECK(o.check->empty_cache_calls == 1);
  // On a device with room to spare the cudaMalloc that PyTorch's failed fails too, so the
  // retry path releases what PyTorch's released, and counts a retry as PyTorch's did.
  CHECK(o.check->forced_failures == 1);
  CHECK(o.stats.num_alloc_retries == 1);
  CHECK(o.stats.num_device_free == 2);
}

TEST_CASE("a tie broken by address goes PyTorch's way on PyTorch's addresses",
          "[alloc][recording]") {
  const replay_outcome o = follow_snapshot("addresses");
  check_reproduced_exactly(o, 3);
  CHECK(o.stats.num_device_free == 1);  // X released by the empty_cache()
  // The same decisions on rising addresses break the tie the other way: nothing is released.
  const replay_outcome other = replay(read_snapshot("addresses"), own_settings("addresses"),
                                      80ull << 30, {}, follow_pytorch::no);
  CHECK(other.stats.num_device_free == 0);
}

TEST_CASE("two streams: streams numbered by handle, a free that completes late",
          "[alloc][recording]") {
  const trace_events t = read_snapshot("streams");
  check_reproduced_exactly(follow_snapshot("streams"), 2);
  // The side stream's handle is above the default stream's 0: stream 1.
  const auto side = std::find_if(t.recorded->decisions.begin(), t.recorded->decisions.end(),
                                 [](const recorded_decision& d) { return d.decision.stream == 1; });
  CHECK(side != t.recorded->decisions.end());
}

TEST_CASE(
    "expandable segments: a mapped range from before, map and unmap, a reservation per "
    "stream",
    "[alloc][recording]") {
  const trace_events t = read_snapshot("expandable");
  REQUIRE(t.recorded);
  REQUIRE(t.recorded->start.segments.size() == 1);
  const start_segment& e = t.recorded->start.segments[0];
  CHECK(e.expandable);
  CHECK(e.address == fixture_base);
  CHECK(e.reservation == fixture_base);
  CHECK(e.size == 20 * one_mib);
  CHECK(t.recorded->reservation_bases == std::vector<std::uint64_t>{fixture_base + 0x4000000000});
  const replay_outcome o = follow_snapshot("expandable");
  check_reproduced_exactly(o, 3);
  CHECK(own_settings("expandable").expandable_segments);
}

TEST_CASE("a PyTorch 2.0 snapshot: its format tells the release, its blocks their requests",
          "[alloc][recording]") {
  const auto facts = read_torch_snapshot_facts(snapshot_fixture("v2.0"));
  REQUIRE(facts.format);
  CHECK(facts.format->releases() == "2.0");
  CHECK_FALSE(facts.alloc_conf);  // no allocator_settings before 2.3
  const replay_outcome o = follow_snapshot("v2.0");
  check_reproduced_exactly(o, 1);
  CHECK(o.check->start_blocks == 1);
}

TEST_CASE("the device whose trace has the OOM", "[alloc][recording]") {
  const auto devices = read_torch_snapshot_devices(snapshot_fixture("devices"));
  REQUIRE(devices.size() == 2);
  CHECK_FALSE(devices[0].oom_size);
  CHECK(devices[0].events > devices[1].events);
  CHECK(devices[1].oom_size == 600 * one_mib);
  // Reserved at the OOM plus the device's free memory then.
  CHECK(devices[1].device_total == 300 * one_mib);
  CHECK(devices[1].device == 1);
}

TEST_CASE("a replay that parts from PyTorch says where, and goes on on fresh addresses",
          "[alloc][recording]") {
  // The start-state snapshot on a device too small for the 30 MiB segment PyTorch made there:
  // the replay runs out of memory where PyTorch got its segment.
  const replay_outcome o = replay(read_snapshot("start-state"), own_settings("start-state"),
                                  40ull << 20, std::nullopt, follow_pytorch::yes);
  REQUIRE(o.check);
  CHECK_FALSE(o.check->reproduced());
  REQUIRE(o.check->first);
  const divergence& d = *o.check->first;
  CHECK(d.index == 0);
  REQUIRE(d.pytorch);
  CHECK(d.pytorch->kind == decision_kind::segment_alloc);
  CHECK(d.pytorch->size == 30 * one_mib);
  CHECK(d.entry == 4u);
  CHECK(o.check->summary().starts_with(
      "0 of PyTorch's 2 cudaMalloc/cudaFree decisions reproduced, then events[3] "
      "(device_traces[0][4]): PyTorch made segment_alloc of 30 MiB at 0x7f3a20000000 on stream "
      "0, pinbench oom of 30 MiB on stream 0"));
  CHECK(o.ooms == 1);
}

TEST_CASE("the follower: PyTorch's addresses, a failed cudaMalloc where PyTorch's failed",
          "[alloc][recording]") {
  recording rec;
  rec.decisions = {{{decision_kind::segment_alloc, fixture_base + 0x100000, 2 * one_mib, 0}, 0, 0},
                   {{decision_kind::segment_free, fixture_base + 0x100000, 2 * one_mib, 0}, 3, 1},
                   {{decision_kind::segment_alloc, fixture_base, 20 * one_mib, 0}, 4, 1}};
  decision_follower f(rec, 1ull << 30, true);
  f.at_event(0);
  void* a = f.allocate(2 * one_mib);
  CHECK(reinterpret_cast<std::uintptr_t>(a) == fixture_base + 0x100000);  // PyTorch's address
  f.on_decision({decision_kind::segment_alloc, fixture_base + 0x100000, 2 * one_mib, 0});
  f.at_event(1);
  // PyTorch released before its next cudaMalloc: this one fails, as PyTorch's did.
  CHECK(f.allocate(20 * one_mib) == nullptr);
  f.deallocate(a, 2 * one_mib);
  f.on_decision({decision_kind::segment_free, fixture_base + 0x100000, 2 * one_mib, 0});
  void* b = f.allocate(20 * one_mib);
  CHECK(reinterpret_cast<std::uintptr_t>(b) == fixture_base);
  f.on_decision({decision_kind::segment_alloc, fixture_base, 20 * one_mib, 0});
  // Something PyTorch never did: the check says so, and fresh addresses follow.
  void* c = f.allocate(4 * one_mib);
  CHECK(reinterpret_cast<std::uintptr_t>(c) > fixture_base + (1ull << 40));
  f.on_decision(
      {decision_kind::segment_alloc, reinterpret_cast<std::uintptr_t>(c), 4 * one_mib, 0});
  const decision_check check = f.check();
  CHECK(check.pytorch == 3);
  CHECK(check.identical == 3);
  CHECK(check.replayed == 4);
  CHECK(check.forced_failures == 1);
  REQUIRE(check.first);
  CHECK_FALSE(check.first->pytorch);
  CHECK(check.first->describe().ends_with(
      fmt::format(": PyTorch made nothing, pinbench segment_alloc of 4 MiB at {:#x} on stream 0",
                  reinterpret_cast<std::uintptr_t>(c))));
  f.deallocate(b, 20 * one_mib);
  f.deallocate(c, 4 * one_mib);
}

TEST_CASE(
    "the follower forces a failure only at the event PyTorch's was at, and checks a "
    "trailing oom",
    "[alloc][recording]") {
  // PyTorch ran out of memory at events[1]. At events[0] the replay asks for a segment PyTorch
  // never made: a difference there, not a failure made up at the wrong event.
  recording rec;
  rec.decisions = {{{decision_kind::oom, 0, 20 * one_mib, 0}, 5, 1}};
  {
    decision_follower f(rec, 80ull << 30, true);
    f.at_event(0);
    void* p = f.allocate(20 * one_mib);
    REQUIRE(p != nullptr);
    f.on_decision(
        {decision_kind::segment_alloc, reinterpret_cast<std::uintptr_t>(p), 20 * one_mib, 0});
    const decision_check c = f.check();
    CHECK(c.forced_failures == 0);
    REQUIRE(c.first);
    CHECK(c.first->event == 0);
    REQUIRE(c.first->pytorch);
    CHECK(c.first->pytorch->kind == decision_kind::oom);
    f.deallocate(p, 20 * one_mib);
  }
  {
    // The replay never runs out where PyTorch did: not reproduced.
    decision_follower f(rec, 80ull << 30, true);
    f.at_event(0);
    f.at_event(1);
    const decision_check c = f.check();
    CHECK_FALSE(c.reproduced());
    REQUIRE(c.first);
    CHECK(c.first->pytorch->kind == decision_kind::oom);
    CHECK_FALSE(c.first->pinbench);
  }
}

TEST_CASE(
    "expandable reservations of two pools: one given back while the other's pages stay, "
    "on a larger device than the recording's",
    "[alloc][recording]") {
  // 27 GiB apart; pinbench reserves 90 GiB for each on an 80 GiB device.
  check_reproduced_exactly(follow_snapshot("two-reservations"), 3);
  const trace_events t = read_snapshot("two-reservations");
  REQUIRE(t.recorded->start.segments.size() == 2);
  CHECK(t.recorded->start.segments[0].small);  // told by the 4 KiB request made in it
  CHECK_FALSE(t.recorded->start.segments[1].small);
}

TEST_CASE("a snapshot's release is dated from the whole file, whichever device is replayed",
          "[alloc][recording]") {
  const auto devices = read_torch_snapshot_devices(snapshot_fixture("devices"));
  REQUIRE(devices.size() == 2);
  REQUIRE(devices[0].format);
  REQUIRE(devices[1].format);
  CHECK(devices[0].format->releases() == devices[1].format->releases());
}

TEST_CASE("malformed snapshot records are refused with the file and the record's path",
          "[alloc][recording]") {
  const std::string bad = pinbench::testing::source_dir() + "/tests/data/traces/bad/";
  const auto error_of = [](const std::string& path) {
    try {
      auto source = open_trace(path);
      (void)read_all(*source);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error_of(bad + "pickle-overlapping-segments.pickle")
            .ends_with("pickle-overlapping-segments.pickle: segments: expected segments apart, "
                       "got one at 0x7f3a00000000 of 2097152 bytes and one at 0x7f3a00100000 on "
                       "device 0"));
  CHECK(error_of(bad + "pickle-huge-address.pickle")
            .ends_with("pickle-huge-address.pickle: device_traces[0][0]: expected an address and "
                       "a size below 2^60, got 0x4000000000000000 and 262144"));
}
