// Snapshots as JSON: the structure of torch.cuda.memory._snapshot().
#include <catch2/catch.hpp>

#include "kinds/allocator/snapshot_json.hpp"

using namespace pinbench::alloc;
using nlohmann::json;
using pinbench::kinds::allocator::snapshot_json;

TEST_CASE("a snapshot is written in torch.cuda.memory._snapshot()'s structure",
          "[alloc][snapshot]") {
  snapshot s;
  segment_info seg;
  seg.address = 0x7f0000000000;
  seg.total_size = 2 << 20;
  seg.allocated_size = 1536;
  seg.active_size = 1536;
  seg.requested_size = 1000;
  seg.stream = 3;
  seg.segment_type = "small";
  seg.blocks = {{0x7f0000000000, 1536, 1000, "active_allocated"},
                {0x7f0000000600, (2 << 20) - 1536, 0, "inactive"}};
  s.segments.push_back(seg);
  s.trace = {{"segment_alloc", 0x7f0000000000, 2 << 20, 3, 1},
             {"alloc", 0x7f0000000000, 1536, 3, 2}};

  const json j = snapshot_json(s);
  REQUIRE(j.at("segments").size() == 1);
  const auto& js = j["segments"][0];
  CHECK(js == json{{"device", 0},
                   {"address", 0x7f0000000000},
                   {"total_size", 2 << 20},
                   {"stream", 3},
                   {"segment_type", "small"},
                   {"allocated_size", 1536},
                   {"active_size", 1536},
                   {"requested_size", 1000},
                   {"is_expandable", false},
                   {"blocks", json::array({json{{"address", 0x7f0000000000},
                                                {"size", 1536},
                                                {"requested_size", 1000},
                                                {"state", "active_allocated"}},
                                           json{{"address", 0x7f0000000600},
                                                {"size", (2 << 20) - 1536},
                                                {"requested_size", 0},
                                                {"state", "inactive"}}})}});
  // One device, one list of trace entries.
  REQUIRE(j.at("device_traces").is_array());
  REQUIRE(j["device_traces"].size() == 1);
  const auto& trace = j["device_traces"][0];
  REQUIRE(trace.size() == 2);
  CHECK(trace[1] == json{{"action", "alloc"},
                         {"addr", 0x7f0000000000},
                         {"size", 1536},
                         {"stream", 3},
                         {"seq", 2}});

  const json empty = snapshot_json(snapshot{});
  CHECK(empty["segments"] == json::array());
  CHECK(empty["device_traces"] == json::array({json::array()}));
}
