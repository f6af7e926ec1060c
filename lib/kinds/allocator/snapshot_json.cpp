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

nlohmann::json snapshot_json(const alloc::snapshot& s, const alloc::config& conf) {
  nlohmann::json out = snapshot_json(s);
  nlohmann::json divisions = nlohmann::json::object();
  const alloc::roundup_intervals intervals =
      alloc::collapse_intervals(conf.roundup_power2_divisions);
  for (std::size_t j = 0; j < intervals.size(); ++j)  // keyed by the interval's start in MiB
    divisions[std::to_string(std::uint64_t{1} << j)] = intervals[j];
  out["allocator_settings"] = {
      {"PYTORCH_CUDA_ALLOC_CONF", conf.to_string()},
      {"max_split_size",
       conf.max_split_size_bytes ? nlohmann::json(*conf.max_split_size_bytes) : nlohmann::json(-1)},
      {"garbage_collection_threshold", conf.garbage_collection_threshold},
      {"expandable_segments", conf.expandable_segments},
      {"roundup_power2_divisions", std::move(divisions)}};
  // The keys that the release's own snapshots have from 2.5 on, so that the format tells the
  // release back (from 2.3 to 2.4 it is allocator_settings alone; pinbench writes them always).
  const alloc::pytorch_release r = conf.release;
  if (r.at_least(2, 9)) out["allocator_settings"]["graph_capture_record_stream_reuse"] = false;
  if (r.at_least(2, 5)) out["external_annotations"] = nlohmann::json::array();
  for (auto& trace : out["device_traces"])
    for (auto& e : trace) {
      if (r.at_least(2, 8)) e["compile_context"] = "N/A";
      if (r.at_least(2, 10)) e["user_metadata"] = "";
    }
  return out;
}

nlohmann::json torch_pickle_form(const nlohmann::json& snapshot) {
  using nlohmann::json;
  json out = snapshot;
  for (auto& seg : out["segments"]) {
    seg["segment_pool_id"] = json::array({0, 0});
    seg["frames"] = json::array();
    for (auto& b : seg["blocks"]) b["frames"] = json::array();
  }
  // A release's stack says what made it, as PyTorch's does when it records stacks: the
  // program's empty_cache(), or the allocator's malloc (its retry path).
  const json by_empty_cache =
      json::array({{{"filename", "torch/cuda/memory.py"}, {"line", 0}, {"name", "empty_cache"}}});
  const json by_malloc = json::array(
      {{{"filename", ""},
        {"line", 0},
        {"name", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"}}});
  for (auto& trace : out["device_traces"]) {
    json kept = json::array();
    bool emptying = false;
    for (auto& e : trace) {
      const std::string action = e.value("action", "");
      if (action == "empty_cache") {
        emptying = true;
        continue;
      }
      const bool release = action == "segment_free" || action == "segment_unmap";
      if (!release) emptying = false;
      if (e.contains("seq")) {
        e["time_us"] = e["seq"];
        e.erase("seq");
      }
      // PyTorch keeps an oom's free device memory under its own key.
      if (e.value("action", "") == "oom") {
        e["device_free"] = e["addr"];
        e.erase("addr");
      }
      e["frames"] = release ? (emptying ? by_empty_cache : by_malloc) : json::array();
      kept.push_back(std::move(e));
    }
    trace = std::move(kept);
  }
  return out;
}

}  // namespace pinbench::kinds::allocator
