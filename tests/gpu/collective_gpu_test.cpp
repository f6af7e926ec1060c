// Collectives through NCCL on a real GPU: the library loaded at run time, a group over this
// process's first GPU, and the kind's engine (which verifies every rank's values) for every op.
// Without an NCCL library the test says why and checks nothing more.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "collective/collective.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds/registry.hpp"

using namespace pinbench;

TEST_CASE("NCCL runs every op on this GPU and the values are right", "[gpu][collective]") {
  const auto nccl = collective::nccl_availability();
  if (!nccl.usable) {
    WARN("no NCCL here, nothing checked: " << nccl.reason);
    return;
  }
  INFO("NCCL " << nccl.version << " from " << nccl.library);
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  device::backend* devices[] = {dev.get()};
  const auto g = collective::make_local_group(devices);
  CHECK(g->describe().find("NCCL") == 0);
  CHECK(g->world_size() == 1);

  const auto* kind = kinds::find("collective");
  REQUIRE(kind != nullptr);
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"})
    for (const bool in_place : {false, true}) {
      if (in_place && std::string(op) == "send_recv") continue;  // not run over NCCL
      INFO(op << " in_place " << in_place);
      nlohmann::json params;
      for (const auto& p : kind->params) params[p.name] = p.default_value;
      params["op"] = op;
      params["bytes"] = 1 << 20;
      params["in_place"] = in_place;
      measure::case_spec c;
      c.id = op;
      c.params = params;
      c.typed = kind->parse_case(params, "gpu-test");
      c.sampling.warmup = 1;
      c.sampling.min_samples = 2;
      c.sampling.max_samples = 3;
      c.sampling.min_time_ns = 0;
      measure::run_context ctx{.dev = *dev};
      const auto r = kind->make_engine()->run_case(c, ctx);
      INFO(r.message);
      CHECK(r.status == result::case_status::ok);
      CHECK(r.extra.at("verified") == true);
      // One GPU, one rank: no busbw (nothing crosses a link), the reason instead.
      CHECK(r.find("busbw") == nullptr);
      CHECK(r.extra.contains("busbw_reason"));
      CHECK(r.find("algbw") != nullptr);
      CHECK(r.extra.at("timing").get<std::string>().find("one wait") != std::string::npos);
    }
}
