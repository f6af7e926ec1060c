// PyTorch memory snapshot pickles as traces: the same events as the JSON that
// scripts/torch_snapshot_to_trace.py makes of them (both committed, from
// tests/data/traces/make_snapshot_pickles.py), the oom as an allocation, the facts a tuner reads,
// and the refusals.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "alloc/config.hpp"
#include "alloc/torch_snapshot.hpp"
#include "alloc/workload.hpp"
#include "cli_in_process.hpp"
#include "core/error.hpp"
#include "scratch_dir.hpp"
#include "test_paths.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace trace_pickle_test {

std::string traces_dir() {
  return pinbench::testing::source_dir() + "/tests/data/traces/";
}

std::vector<event> events_of(const std::string& name, int device = 0) {
  auto source = open_trace(traces_dir() + name, {.device = device});
  std::vector<event> out;
  event e;
  while (source->next(e)) out.push_back(e);
  return out;
}

std::string error_of(const std::string& path, int device = 0) {
  try {
    auto source = open_trace(path, {.device = device});
    event e;
    while (source->next(e)) {
    }
  } catch (const input_error& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    return m;
  }
  return "(accepted)";
}

bool same(const event& a, const event& b) {
  return a.op == b.op && a.id == b.id && a.size == b.size && a.stream == b.stream &&
         a.label == b.label;
}

void check_same(const std::vector<event>& got, const std::vector<event>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("event " << i);
    CHECK(same(got[i], expected[i]));
  }
}

constexpr std::uint64_t mib = 1 << 20;

}  // namespace trace_pickle_test

using namespace trace_pickle_test;

TEST_CASE(
    "a snapshot pickle gives the events the conversion script gives, and the frees of the "
    "blocks its recording began with",
    "[alloc][trace]") {
  const auto expected = events_of("snapshot.json");
  REQUIRE(expected.size() == 6);
  for (const char* name : {"snapshot-p2.pickle", "snapshot-p4.pickle", "snapshot-p5.pickle"}) {
    INFO(name);
    // The script drops the free of the block allocated before the recording; pinbench frees
    // the block it starts the replay with, under an id of the start state's.
    std::vector<event> own, start_frees;
    for (const auto& e : events_of(name))
      (e.op == event::kind::free && e.id >= start_block_ids ? start_frees : own).push_back(e);
    check_same(own, expected);
    REQUIRE(start_frees.size() == 1);
    const auto source = open_trace(traces_dir() + name);
    event e;
    while (source->next(e)) {
    }
    const auto recorded = source->recorded();
    REQUIRE(recorded);
    // The 1 MiB block freed at device_traces[0][3] lies in no segment of the snapshot: a 2 MiB
    // small-pool segment of its own; the side stream's segment has no segment_alloc in the
    // trace: it existed already.
    REQUIRE(recorded->start.segments.size() == 2);
    const auto& own_segment = recorded->start.segments[0];
    CHECK(own_segment.size == 2 * mib);
    CHECK(own_segment.small);
    REQUIRE(own_segment.live.size() == 1);
    CHECK(own_segment.live[0].size == 1 * mib);
    CHECK(own_segment.live[0].id == start_frees[0].id);
    CHECK(recorded->start.segments[1].size == 20 * mib);
    CHECK(recorded->start.segments[1].stream == 1);
    CHECK(recorded->start.segments[1].live.empty());
    REQUIRE(recorded->decisions.size() == 1);
    CHECK(recorded->decisions[0].decision.kind == decision_kind::segment_alloc);
  }
  // Device 1's trace: one allocation.
  const auto device1 = events_of("snapshot-p4.pickle", 1);
  REQUIRE(device1.size() == 1);
  CHECK(device1[0].op == event::kind::alloc);
  CHECK(device1[0].size == 1 * mib);
}

TEST_CASE("a snapshot's oom entry becomes an allocation of the size that failed",
          "[alloc][trace]") {
  // Dumped at the oom: the script's events, then the failed request, never freed.
  auto expected = events_of("snapshot-oom.json");
  const auto got = events_of("snapshot-oom.pickle");
  REQUIRE(got.size() == expected.size() + 1);
  check_same(std::vector<event>(got.begin(), got.end() - 1), expected);
  CHECK(got.back().op == event::kind::alloc);
  CHECK(got.back().size == 512 * mib);
  CHECK(got.back().stream == 0);
  for (const auto& e : expected) CHECK(e.id != got.back().id);

  // Gone on after the oom: the oom sits where it happened, with an id of its own; the
  // segment_free whose stack shows empty_cache() is the program's call, made again.
  const auto after = events_of("snapshot-after-oom.pickle");
  REQUIRE(after.size() == 7);
  CHECK(after[3].op == event::kind::alloc);
  CHECK(after[3].size == 512 * mib);
  CHECK(after[4].op == event::kind::free);
  CHECK(after[4].id == 1);
  CHECK(after[5].op == event::kind::empty_cache);
  CHECK(after[6].op == event::kind::alloc);
  CHECK(after[6].id == 4);
  for (std::size_t i = 4; i < after.size(); ++i) CHECK(after[i].id != after[3].id);
}

TEST_CASE("a snapshot's facts: settings as config text, the oom, reserved memory",
          "[alloc][trace]") {
  const auto basic = read_torch_snapshot_facts(traces_dir() + "snapshot-p2.pickle");
  REQUIRE(basic.alloc_conf);
  CHECK(*basic.alloc_conf == "");  // PyTorch's defaults: max_split_size -1, nothing rounded
  CHECK_FALSE(basic.oom_size);
  CHECK_FALSE(basic.oom_device_free);
  CHECK(basic.events == 7);
  CHECK(basic.reserved_at_snapshot == 40 * mib);  // device 0's two segments
  CHECK_FALSE(basic.reserved_at_oom);
  CHECK(basic.device_total == 0);
  CHECK(basic.notes == std::vector<std::string>{
                           "1 block(s) live when the recording began lie in no segment the "
                           "snapshot shows: each was given a segment of its own",
                           "the recording began with 2 segment(s) (23068672 bytes reserved) and 1 "
                           "live block(s) (1048576 bytes): the replay starts from them",
                           "2 allocation(s) are still live at the end of the trace"});
  CHECK(basic.start_segments == 2);
  CHECK(basic.start_live_blocks == 1);
  CHECK(basic.pytorch_decisions == 1);
  REQUIRE(basic.format);
  CHECK(basic.format->releases() == "2.3-2.4");
  CHECK(read_torch_snapshot_facts(traces_dir() + "snapshot-p4.pickle", 1).reserved_at_snapshot ==
        2 * mib);

  const auto oom = read_torch_snapshot_facts(traces_dir() + "snapshot-oom.pickle");
  REQUIRE(oom.alloc_conf);
  CHECK(*oom.alloc_conf ==
        "max_split_size_mb:256,roundup_power2_divisions:[128:1,256:2,512:8,>:8],"
        "garbage_collection_threshold:0.6");
  const config c = parse_config(*oom.alloc_conf, "", "alloc_conf");
  CHECK(c.max_split_size_bytes == 256 * mib);
  CHECK(c.garbage_collection_threshold == 0.6);
  CHECK(c.divisions_for(1 * mib) == 1);
  CHECK(c.divisions_for(100 * mib) == 1);
  CHECK(c.divisions_for(300 * mib) == 2);
  CHECK(c.divisions_for(600 * mib) == 8);
  CHECK(c.divisions_for(std::uint64_t{40} << 30) == 8);
  CHECK_FALSE(c.expandable_segments);
  CHECK(oom.oom_size == 512 * mib);
  CHECK(oom.oom_device_free == 48 * mib);
  CHECK(oom.events == 4);
  CHECK(oom.oom_event_index == 3);
  CHECK(oom.reserved_at_snapshot == 64 * mib);
  CHECK(oom.reserved_at_oom == 64 * mib);
  CHECK(oom.device_total == 112 * mib);
  CHECK(std::any_of(oom.notes.begin(), oom.notes.end(), [](const std::string& n) {
    return n.find("PYTORCH_CUDA_ALLOC_CONF was \"max_split_size_mb:256,") != std::string::npos;
  }));

  // After the oom, 64 MiB freed to the device and 2 MiB taken: 64 MiB reserved at the oom.
  const auto after = read_torch_snapshot_facts(traces_dir() + "snapshot-after-oom.pickle");
  CHECK(after.reserved_at_snapshot == 2 * mib);
  CHECK(after.reserved_at_oom == 64 * mib);
  CHECK(after.device_total == 112 * mib);
  CHECK(after.oom_event_index == 3);
  CHECK(after.events == 7);
}

TEST_CASE("a snapshot pickle that holds code or is not a snapshot is refused", "[alloc][trace]") {
  const std::string bad = traces_dir() + "bad/";
  // os.system named by GLOBAL (protocol 2), STACK_GLOBAL (protocol 4), and the classic exploit
  // (GLOBAL then REDUCE, which Python's pickle would call): refused at the reference.
  CHECK_THAT(error_of(bad + "pickle-global.pickle"),
             Catch::EndsWith("pickle-global.pickle: offset 2: opcode GLOBAL (0x63) refused: a "
                             "memory snapshot holds only plain data, and loading code from a "
                             "file is never done"));
  CHECK_THAT(error_of(bad + "pickle-reduce-os-system.pickle"),
             Catch::Contains("offset 2: opcode GLOBAL (0x63) refused"));
  CHECK_THAT(error_of(bad + "pickle-stack-global.pickle"),
             Catch::Contains("opcode STACK_GLOBAL (0x93) refused"));
  CHECK_THAT(error_of(bad + "pickle-truncated.pickle"), Catch::Contains(": offset "));
  CHECK_THAT(error_of(bad + "pickle-no-device-traces.pickle"),
             Catch::EndsWith("pickle-no-device-traces.pickle: device_traces: missing: not a torch "
                             "memory snapshot (was the history recorded with "
                             "torch.cuda.memory._record_memory_history()?)"));
  CHECK_THAT(error_of(traces_dir() + "snapshot-p4.pickle", 2),
             Catch::EndsWith("snapshot-p4.pickle: device_traces[2]: no such device (the snapshot "
                             "has traces for 2 devices)"));
  CHECK_THAT(error_of(traces_dir() + "snapshot-oom.pickle", 1),
             Catch::EndsWith("device_traces[1]: no such device (the snapshot has traces for 1 "
                             "device)"));
  CHECK_THROWS_AS(read_torch_snapshot_facts(traces_dir() + "snapshot-oom.pickle", -1), input_error);
}

TEST_CASE("a snapshot pickle's entries are checked with their path", "[alloc][trace]") {
  const pinbench::testing::scratch_dir dir("trace-pickle");
  // {"device_traces": [[{"action": "alloc", "addr": -1}]]} in protocol 2, by hand.
  const auto text = [](const std::string& t) {  // BINUNICODE
    return "X" + std::string(1, static_cast<char>(t.size())) + std::string(3, '\0') + t;
  };
  const std::string p = std::string("\x80\x02}(") + text("device_traces") + "]]}(" +
                        text("action") + text("alloc") + text("addr") + "J\xff\xff\xff\xff" +
                        "uaau.";
  const auto path = (dir.path() / "entry.pickle").string();
  std::ofstream(path, std::ios::binary) << p;
  CHECK_THAT(error_of(path), Catch::EndsWith("entry.pickle: device_traces[0][0].addr: expected a "
                                             "non-negative integer, got an integer"));
  // check_trace_file: the PROTO byte and protocol, without reading on.
  CHECK_NOTHROW(check_trace_file(path));
  std::ofstream(path, std::ios::binary) << std::string("\x80\x09N.", 4);
  CHECK_THROWS_WITH(check_trace_file(path),
                    Catch::Contains("expected a pickle of protocol 2 to 5 (a PyTorch memory "
                                    "snapshot), got protocol 9"));
  // Over 2 GiB (a sparse file: nothing is written): refused before it is read.
  const auto huge = dir.path() / "huge.pickle";
  std::ofstream(huge, std::ios::binary) << std::string("\x80\x04", 2);
  std::filesystem::resize_file(huge, (std::uint64_t{2} << 30) + 1);
  for (const bool at_load : {true, false}) {
    INFO(at_load);
    try {
      if (at_load)
        check_trace_file(huge.string());
      else
        (void)open_trace(huge.string());
      FAIL("a snapshot over 2 GiB was accepted");
    } catch (const input_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("a snapshot pickle of 2147483649 bytes: larger than "
                                           "the 2147483648 bytes (2 GiB) this reader loads"));
    }
  }
}

TEST_CASE("pinbench run replays a snapshot pickle given as trace_file", "[alloc][trace][cli]") {
  const pinbench::testing::scratch_dir dir("trace-pickle-run");
  const auto scenario = dir.path() / "s.json";
  std::ofstream(scenario) << R"({"schema": "pinbench.scenario/1", "name": "snap", )"
                          << R"("kind": "allocator", "params": {"workload": "trace", )"
                          << R"("trace_file": ")" << traces_dir() << R"(snapshot-oom.pickle"}})";
  const auto out = dir.path() / "r.json";
  const auto o = pinbench::testing::run_cli_in_process(
      {"run", scenario.string(), "--backend", "host", "--quiet", "--out", out.string(), "--set",
       "sampling.min_samples=1", "--set", "sampling.max_samples=1", "--set",
       "device_memory=256MiB"},
      dir.path());
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto r = nlohmann::json::parse(in);
  const auto& metrics = r["scenarios"][0]["cases"][0]["metrics"];
  // The 512 MiB request that failed in PyTorch fails here too, on a 256 MiB device.
  CHECK(metrics["num_ooms"]["samples"][0] == 1);

  // trace_device chooses the device; a device the snapshot lacks fails the case, with the path.
  const auto bad = pinbench::testing::run_cli_in_process(
      {"run", scenario.string(), "--backend", "host", "--quiet", "--out", out.string(), "--set",
       "sampling.min_samples=1", "--set", "sampling.max_samples=1", "--set", "trace_device=3"},
      dir.path());
  CHECK(bad.code == 1);
  std::ifstream bad_in(out);
  const auto failed = nlohmann::json::parse(bad_in)["scenarios"][0]["cases"][0];
  CHECK(failed["status"] == "error");
  CHECK_THAT(failed["message"].get<std::string>(),
             Catch::Contains("snapshot-oom.pickle: device_traces[3]: no such device"));
}
