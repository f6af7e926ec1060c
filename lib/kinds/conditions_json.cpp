#include "kinds/conditions_json.hpp"

namespace pinbench::kinds {

nlohmann::json numa_json(const device::numa_record& r) {
  nlohmann::json out = {{"node", r.node ? nlohmann::json(*r.node) : nlohmann::json()},
                        {"cpus", r.cpus},
                        {"placed", r.placed},
                        {"reason", r.reason},
                        {"requested", r.requested}};
  if (r.buffer_node) out["buffer_node"] = *r.buffer_node;
  return out;
}

nlohmann::json link_ceiling_json(const device::link_ceiling& c) {
  if (c.gbps) return {{"gbps", *c.gbps}, {"source", c.source}};
  return {{"gbps", nullptr}, {"reason", c.reason}};
}

}  // namespace pinbench::kinds
