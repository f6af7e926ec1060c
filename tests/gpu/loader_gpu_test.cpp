// The loader on a real device: every pin stage and copy mode delivers verified data (order and
// exactly-once checked on headers copied back from device memory), gpu_busy comes from CUDA
// events, and the pinned pools really page-lock. Runs only where main.cpp finds a usable device.
#include <catch2/catch.hpp>

#include <string>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "loader/pinned_pool.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;

TEST_CASE("gpu: a loader scenario end to end on the cuda backend", "[gpu][loader]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  const std::string text = R"({"schema": "pinbench.scenario/1", "name": "gpu-loader",
    "kind": "loader",
    "params": {"dataset": {"samples": 300, "sample_bytes": "16KiB", "cpu_per_sample": "5us"},
               "batch_size": 16, "num_workers": 2, "compute_per_batch": "200us"},
    "matrix": {"pin_memory": [false, true], "pin_mode": ["per_batch", "ring"],
               "non_blocking": [false, true]},
    "sampling": {"warmup": 1, "min_samples": 2, "max_samples": 2, "min_time": "0",
                 "timeout": "20s"}})";
  run::plan_settings settings;
  settings.seed = 1;
  const auto r = run::run_scenarios(
      run::make_plan({scenario::parse_scenario(text, "gpu.json")}, settings), *dev, {});
  CHECK(r.backend == "cuda");
  const auto& cases = r.scenarios.at(0).cases;
  REQUIRE(cases.size() == 8);
  for (const auto& c : cases) {
    INFO(c.id << ": " << c.message);
    REQUIRE(c.status == result::case_status::ok);
    CHECK(c.extra.at("verified") == true);
    const auto* busy = c.find("gpu_busy");
    REQUIRE(busy != nullptr);
    for (double b : busy->samples) {
      CHECK(b > 0);
      CHECK(b <= 1);
    }
    const auto* compute = c.find("compute_time");
    REQUIRE(compute != nullptr);
    // The calibrated kernel: 200 us of device time, within a wide margin.
    for (double ns : compute->samples) CHECK(ns > 100'000);
  }
  CHECK_FALSE(r.scenarios.at(0).verdict.empty());
}

TEST_CASE("gpu: the pinned pools hand out page-locked memory", "[gpu][loader]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  auto pool = loader::make_caching_host_allocator(*dev, 0);
  auto lease = pool->acquire(1 << 20);
  CHECK(lease.page_locked);
  auto s = dev->create_stream();
  pool->release(lease, *s);
  dev->synchronize(*s);
  auto ring = loader::make_pinned_ring(*dev, 3, 1 << 20, 0);
  auto slot = ring->acquire(1 << 20);
  CHECK(slot.page_locked);
  ring->discard(slot);
}
