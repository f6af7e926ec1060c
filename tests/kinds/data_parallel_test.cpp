// Kind data_parallel on emulated host devices: device 0's extra memory under dp (exactly what it
// gathers and receives), equal peaks under ddp, the all-reduced and reduced gradients checked
// value by value, too few devices as a skipped case, the verdict, and the built-in through the
// binary. No timing thresholds: only memory figures, structure and values are compared.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "cli_runner.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds/data_parallel/data_parallel_trainer.hpp"
#include "kinds/data_parallel/data_parallel_verdict.hpp"
#include "kinds_support.hpp"
#include "result/result_io.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"

using namespace pinbench;
using pinbench::testing::metric_of;

namespace {

std::string dp_doc(const std::string& params, const std::string& matrix = {}) {
  return R"({"schema": "pinbench.scenario/1", "name": "dp", "kind": "data_parallel", "params": )" +
         params + ", " + (matrix.empty() ? "" : R"("matrix": )" + matrix + ", ") +
         R"("sampling": {"warmup": 1, "min_samples": 2, "max_samples": 2, "min_time": "0", )"
         R"("timeout": "20s"}})";
}

// Runs the scenario with `device_count` emulated host devices that the engine may open.
result::run_result run_dp_text(const std::string& text, int device_count = 4) {
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.seed = 5;
  const auto platform = device::platform::host({}, device_count);
  run::run_options o;
  o.platform = &platform;
  return run::run_scenarios(run::make_plan({scenario::parse_scenario(text, "test.json")}, settings),
                            *dev, o);
}

double dp_value_of(const result::case_result& c, const std::string& name) {
  const auto& m = metric_of(c, name);
  INFO(name);
  REQUIRE(m.deterministic);
  REQUIRE(m.samples.size() == 1);
  return m.samples.front();
}

// Sizes are multiples of 512 B, the caching allocator's rounding, so that peaks add up exactly.
constexpr std::uint64_t sample = 1_KiB, output = 4_KiB, activation = 8_KiB, parameters = 2_MiB;
constexpr int batch = 12;

std::string dp_model(int devices, std::uint64_t activation_bytes) {
  return fmt::format(
      R"({{"devices": {}, "batch_size": {}, "sample_bytes": {}, "output_bytes": {},
          "activation_bytes": {}, "parameter_bytes": {}, "bucket_bytes": "768KiB",
          "compute_per_batch": "3ms"}})",
      devices, batch, sample, output, activation_bytes, parameters);
}

}  // namespace

TEST_CASE("data_parallel dp: device 0 peaks above the others by what it gathers and receives",
          "[data_parallel]") {
  for (const int devices : {2, 3}) {
    for (const std::uint64_t act : {std::uint64_t{0}, activation}) {
      INFO(devices << " devices, activation_bytes " << act);
      const auto r = run_dp_text(dp_doc(dp_model(devices, act), R"({"mode": ["dp"]})"));
      const auto& c = r.scenarios.at(0).cases.at(0);
      INFO(c.message);
      REQUIRE(c.status == result::case_status::ok);
      CHECK(c.extra.at("verified") == true);  // replicas and reduced gradients, value by value

      const auto others = static_cast<std::uint64_t>(devices - 1);
      const std::uint64_t shard = batch / static_cast<std::uint64_t>(devices);
      const std::uint64_t gathered = batch * output, received = others * parameters;
      // Every other device: its replica's parameters and gradients, its input, activations and
      // outputs, all at once during backward.
      const std::uint64_t other_peak = 2 * parameters + shard * (sample + act + output);
      for (int k = 1; k < devices; ++k)
        CHECK(dp_value_of(c, fmt::format("peak_memory.dev{}", k)) ==
              static_cast<double>(other_peak));
      // Device 0 adds the gathered outputs and, once backward freed its activations, the
      // gradients it receives.
      const double extra = dp_value_of(c, "device0_extra_memory");
      const std::uint64_t freed = shard * act;
      CHECK(extra == static_cast<double>(gathered + received - freed));
      if (act == 0) CHECK(extra >= static_cast<double>(gathered + received));
      CHECK(dp_value_of(c, "peak_memory.dev0") == static_cast<double>(other_peak) + extra);
      CHECK(c.extra.at("device0_holds").at("received_gradients") == received);
      CHECK(c.extra.at("device0_holds").at("gathered_outputs") == gathered);
      CHECK(metric_of(c, "comm_time").samples.size() == 2);
      CHECK(c.find("comm_overlap") == nullptr);
    }
  }
}

TEST_CASE("data_parallel ddp: equal peaks on every device, gradients all-reduced on each",
          "[data_parallel]") {
  for (const int devices : {1, 2, 3}) {
    INFO(devices << " devices");
    const auto r = run_dp_text(dp_doc(dp_model(devices, activation), R"({"mode": ["ddp"]})"));
    const auto& c = r.scenarios.at(0).cases.at(0);
    INFO(c.message);
    REQUIRE(c.status == result::case_status::ok);
    // Every device ended with the sum of every device's known gradients (checked element by
    // element after sampling).
    CHECK(c.extra.at("verified") == true);
    CHECK(c.extra.at("buckets") == 3);  // 2 MiB in buckets of 768 KiB
    const double peak0 = dp_value_of(c, "peak_memory.dev0");
    const std::uint64_t shard = batch / static_cast<std::uint64_t>(devices);
    CHECK(peak0 == static_cast<double>(2 * parameters + shard * (sample + activation + output)));
    for (int k = 1; k < devices; ++k)
      CHECK(dp_value_of(c, fmt::format("peak_memory.dev{}", k)) == peak0);
    CHECK(dp_value_of(c, "device0_extra_memory") == 0);
    for (double f : metric_of(c, "comm_overlap").samples) {
      CHECK(f >= 0);
      CHECK(f <= 1);
    }
    for (const char* name : {"step_time", "samples_per_s", "comm_time", "exposed_comm_time"})
      CHECK(metric_of(c, name).samples.size() == 2);
  }
}

TEST_CASE("data_parallel: the known values and their sums", "[data_parallel]") {
  using namespace kinds::data_parallel;
  for (const std::size_t i : {std::size_t{0}, std::size_t{5}, std::size_t{12}, std::size_t{1000}}) {
    float sum = 0;
    for (int k = 0; k < 5; ++k) sum += gradient_value(k, i);
    CHECK(gradient_sum(5, i) == sum);
    CHECK(gradient_value(0, i) != gradient_value(1, i));
  }
}

TEST_CASE("data_parallel: more devices than the process sees is a skipped case",
          "[data_parallel]") {
  const auto r = run_dp_text(dp_doc(dp_model(3, activation), R"({"mode": ["dp", "ddp"]})"), 2);
  for (const auto& c : r.scenarios.at(0).cases) {
    INFO(c.id);
    CHECK(c.status == result::case_status::skipped);
    CHECK(c.message == "needs 3 devices, this process sees 2");
  }
  CHECK_FALSE(r.any_failed());
}

TEST_CASE("data_parallel: devices 0 takes every device the process sees", "[data_parallel]") {
  const auto r = run_dp_text(dp_doc(dp_model(0, activation), R"({"mode": ["ddp"]})"), 3);
  const auto& c = r.scenarios.at(0).cases.at(0);
  INFO(c.message);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(c.extra.at("devices") == 3);
  CHECK(c.find("peak_memory.dev2") != nullptr);
  CHECK(c.find("peak_memory.dev3") == nullptr);
}

TEST_CASE("data_parallel: params that cannot run are refused at load", "[data_parallel]") {
  const auto expanded = [](const std::string& params) {
    return scenario::expand(scenario::parse_scenario(dp_doc(params), "t.json"));
  };
  CHECK_THROWS_WITH(expanded(R"({"parameter_bytes": 1001})"),
                    Catch::Contains("params.parameter_bytes") && Catch::Contains("multiple of 4"));
  CHECK_THROWS_WITH(expanded(R"({"devices": 8, "batch_size": 4})"),
                    Catch::Contains("params.batch_size"));
  CHECK(expanded(R"({"devices": 0, "batch_size": 1})").size() == 1);
}

TEST_CASE("data_parallel: the verdict compares ddp with dp from the medians", "[data_parallel]") {
  const auto make = [](const std::string& mode, double sps, double extra) {
    result::case_result c;
    c.id = "mode=" + mode;
    c.params = {{"mode", mode}, {"devices", 2}};
    c.extra = {{"devices", 2}};
    c.add("samples_per_s", "samples/s", result::direction::higher).samples = {sps, sps, sps};
    c.add("device0_extra_memory", "bytes", result::direction::lower).samples = {extra};
    return c;
  };
  result::scenario_result s;
  s.cases = {make("dp", 100, 96.0 * (1 << 20)), make("ddp", 250, 0)};
  CHECK(kinds::data_parallel::verdict(s, device::platform_kind::host) ==
        "ddp: 2.50x the samples/s of dp (host backend, 2 emulated devices); dp's device 0 peaks "
        "96 MiB above the others, ddp's 0 B");
  s.cases.pop_back();
  CHECK_THAT(kinds::data_parallel::verdict(s, device::platform_kind::host),
             Catch::StartsWith("fastest: mode=dp at 100 samples/s"));
  s.cases.clear();
  CHECK(kinds::data_parallel::verdict(s, device::platform_kind::host).empty());
}

TEST_CASE(
    "data_parallel: the built-in runs through the binary with a verdict and device 0's "
    "extra memory",
    "[data_parallel][app]") {
  const auto dir = testing::fresh_dir("data-parallel");
  const auto out = dir / "r.json";
  // The built-in as it is, with a smaller model and fewer samples to keep the test short.
  const auto o = testing::run_pinbench(
      "run builtin:data-parallel-dp-vs-ddp --backend host --set parameter_bytes=16MiB "
      "--set bucket_bytes=4MiB --set sampling.warmup=0 --set sampling.min_samples=2 "
      "--set sampling.max_samples=2 --out " +
      out.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("device0_extra_memory"));
  CHECK_THAT(o.out, Catch::Contains("samples/s of dp"));
  const auto r = result::read_result_file(out.string());
  REQUIRE(r.scenarios.size() == 1);
  const auto& s = r.scenarios[0];
  CHECK_THAT(s.verdict, Catch::StartsWith("ddp: "));
  CHECK_THAT(s.verdict, Catch::Contains("host backend, 2 emulated devices"));
  REQUIRE(s.cases.size() == 2);
  for (const auto& c : s.cases) {
    INFO(c.id << ": " << c.message);
    CHECK(c.status == result::case_status::ok);
    const double extra = dp_value_of(c, "device0_extra_memory");
    // dp: 4 MiB of gathered outputs (64 x 64 KiB) and 16 MiB of gradients received, less the
    // 8 MiB of activations (32 x 256 KiB) backward freed before they came.
    if (c.params.at("mode") == "dp")
      CHECK(extra == 12.0 * (1 << 20));
    else
      CHECK(extra == 0);
  }
  std::filesystem::remove_all(dir);
}
