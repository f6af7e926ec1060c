// Snapshot to JSON. Key names are PyTorch's (including "addr" in trace entries, "address" in
// segments and blocks); "seq" replaces PyTorch's "time_us", as pinbench's order is a counter.
#include "kinds/allocator/snapshot_json.hpp"

namespace pinbench::kinds::allocator {

nlohmann::json snapshot_json(const alloc::snapshot& s) {
  using nlohmann::json;
  json segments = json::array();
  for (const auto& seg : s.segments) {
    json blocks = json::array();
    for (const auto& b : seg.blocks)
      blocks.push_back({{"address", b.address},
                        {"size", b.size},
                        {"requested_size", b.requested_size},
                        {"state", b.state}});
    segments.push_back({{"device", 0},
                        {"address", seg.address},
                        {"total_size", seg.total_size},
                        {"stream", seg.stream},
                        {"segment_type", seg.segment_type},
                        {"allocated_size", seg.allocated_size},
                        {"active_size", seg.active_size},
                        {"requested_size", seg.requested_size},
                        {"is_expandable", seg.expandable},
                        {"blocks", std::move(blocks)}});
  }
  json trace = json::array();
  for (const auto& t : s.trace)
    trace.push_back({{"action", t.action},
                     {"addr", t.address},
                     {"size", t.size},
                     {"stream", t.stream},
                     {"seq", t.sequence}});
  return {{"segments", std::move(segments)}, {"device_traces", json::array({std::move(trace)})}};
}

}  // namespace pinbench::kinds::allocator
