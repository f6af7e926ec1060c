// NVML telemetry end to end, on a fake libnvidia-ml (tests/fake_nvml/): `info`, the per-case
// telemetry of a host-backend run watching NVML device 0, the throttle warning,
// --discard-on-throttle, and NVML absent or partial. The fake counts calls, not time.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "test_paths.hpp"

namespace pinbench::testing {
namespace {

// Sets an environment variable for the scope (pinbench runs as a child: it inherits it).
class telemetry_env {
 public:
  telemetry_env(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~telemetry_env() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  telemetry_env(const telemetry_env&) = delete;
  telemetry_env& operator=(const telemetry_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A one-case transfer scenario that samples exactly 3 times, quickly.
std::string small_transfer_scenario(const std::string& dir_name) {
  const auto dir = fresh_dir(dir_name);
  const auto path = (dir / "small.json").string();
  std::ofstream(path) << R"({"schema": "pinbench.scenario/1", "name": "small", "kind": "transfer",
    "params": {"direction": "h2d", "bytes": "64KiB", "memory": "pinned"},
    "sampling": {"warmup": 1, "min_samples": 3, "max_samples": 3, "min_time": "0ms",
                 "timeout": "10s"}})";
  return path;
}

nlohmann::json only_case(const std::string& result_path) {
  std::ifstream in(result_path);
  const auto r = nlohmann::json::parse(in);
  REQUIRE(r["scenarios"].size() == 1);
  REQUIRE(r["scenarios"][0]["cases"].size() == 1);
  return r["scenarios"][0]["cases"][0];
}

bool has(const nlohmann::json& list, const std::string& item) {
  for (const auto& x : list)
    if (x == item) return true;
  return false;
}

}  // namespace

TEST_CASE("info shows the NVML devices of the library PINBENCH_NVML_LIBRARY names",
          "[cli][telemetry]") {
  const telemetry_env lib("PINBENCH_NVML_LIBRARY", fake_nvml_library());
  const auto o = run_pinbench("info --format json");
  REQUIRE(o.code == 0);
  const auto t = nlohmann::json::parse(o.out)["telemetry"];
  CHECK(t["available"] == true);
  CHECK(t["library"] == fake_nvml_library());
  CHECK(t["missing"].empty());
  REQUIRE(t["devices"].size() == 1);
  const auto& d = t["devices"][0];
  CHECK(d["index"] == 0);
  CHECK(d["name"] == "Fake H200");
  CHECK(d["pci_bus_id"] == "00000000:17:00.0");
  CHECK(d["sm_clock_mhz"] == 1980);
  CHECK(d["sm_clock_max_mhz"] == 1980);
  CHECK(d["mem_clock_mhz"] == 2619);
  CHECK(d["mem_clock_max_mhz"] == 2619);
  CHECK(d["clock_event_reasons"] == nlohmann::json::array({"gpu_idle"}));
  CHECK(d["power_w"].get<double>() == Approx(123.456));
  CHECK(d["temperature_c"] == 41);
  CHECK(d["pcie_gen"] == 5);
  CHECK(d["pcie_width"] == 16);
  CHECK(d["pcie_gen_max"] == 5);
  CHECK(d["pcie_width_max"] == 16);

  const auto text = run_pinbench("info");
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("Fake H200 (00000000:17:00.0)"));
  CHECK_THAT(text.out, Catch::Contains("sm 1980/1980 MHz"));
  CHECK_THAT(text.out, Catch::Contains("gen 5/5 x16/16"));
}

TEST_CASE("info without NVML says why in one line and exits 0", "[cli][telemetry]") {
  const telemetry_env lib("PINBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  const auto o = run_pinbench("info --format json");
  REQUIRE(o.code == 0);
  const auto t = nlohmann::json::parse(o.out)["telemetry"];
  CHECK(t["available"] == false);
  CHECK_THAT(t["reason"].get<std::string>(), Catch::Contains("/nonexistent/libnvidia-ml.so.1"));
  CHECK(t["devices"].empty());
  const auto text = run_pinbench("info");
  CHECK(text.code == 0);
  // The file named is the one that failed: no advice to set what is set already.
  CHECK_THAT(text.out, Catch::Contains("telemetry (NVML)\n  unavailable: "
                                       "PINBENCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1: "));
}

TEST_CASE("a library missing an entry point gives the rest, that fact null and the call named",
          "[cli][telemetry]") {
  const telemetry_env lib("PINBENCH_NVML_LIBRARY", fake_nvml_no_power_library());
  const auto o = run_pinbench("info --format json");
  REQUIRE(o.code == 0);
  const auto t = nlohmann::json::parse(o.out)["telemetry"];
  CHECK(t["available"] == true);
  // Its clock event reasons go by their name before driver 535: found, so not missing.
  CHECK(t["missing"] == nlohmann::json::array({"nvmlDeviceGetPowerUsage"}));
  REQUIRE(t["devices"].size() == 1);
  CHECK(t["devices"][0]["clock_event_reasons"] == nlohmann::json::array({"gpu_idle"}));
  CHECK(t["devices"][0]["power_w"].is_null());
  CHECK(t["devices"][0]["temperature_c"] == 41);

  const auto scenario = small_transfer_scenario("telemetry-partial");
  const auto out = (std::filesystem::path(scenario).parent_path() / "r.json").string();
  const auto run =
      run_pinbench("run " + scenario + " --backend host -q --telemetry-device 0 --out " + out);
  REQUIRE(run.code == 0);
  const auto c = only_case(out);
  CHECK(c["status"] == "ok");
  const auto& tel = c["info"]["telemetry"];
  CHECK(tel["before"]["power_w"].is_null());
  CHECK(tel["after"]["sm_clock_mhz"] == 1980);
  CHECK(has(tel["missing"], "nvmlDeviceGetPowerUsage"));
}

TEST_CASE("a host-backend run records telemetry of the NVML device it is told to watch",
          "[cli][telemetry]") {
  const telemetry_env lib("PINBENCH_NVML_LIBRARY", fake_nvml_library());
  const auto scenario = small_transfer_scenario("telemetry-watch");
  const auto dir = std::filesystem::path(scenario).parent_path();

  SECTION("by default the host backend watches nothing, and says so") {
    const auto out = (dir / "plain.json").string();
    REQUIRE(run_pinbench("run " + scenario + " --backend host -q --out " + out).code == 0);
    const auto tel = only_case(out)["info"]["telemetry"];
    CHECK(tel["available"] == false);
    CHECK_THAT(tel["reason"].get<std::string>(), Catch::StartsWith("host backend"));
  }
  SECTION("--telemetry-device 0: snapshots before and after, not throttled") {
    const auto out = (dir / "watched.json").string();
    REQUIRE(run_pinbench("run " + scenario + " --backend host -q --telemetry-device 0 --out " + out)
                .code == 0);
    const auto c = only_case(out);
    const auto& tel = c["info"]["telemetry"];
    CHECK(tel["device"] == 0);
    CHECK(tel["before"]["name"] == "Fake H200");
    CHECK(tel["after"]["pcie_width"] == 16);
    CHECK(tel["reasons_seen"] == nlohmann::json::array({"gpu_idle"}));
    CHECK(tel["throttled"] == false);
    CHECK(tel["discarded_samples"] == 0);
    CHECK_FALSE(c.contains("warnings"));
  }
  SECTION("clocks throttled after the case began: a warning naming the reason") {
    const telemetry_env throttle("FAKE_NVML_THROTTLE_AFTER", "1");  // the snapshot before is clean
    const auto out = (dir / "throttled.json").string();
    REQUIRE(run_pinbench("run " + scenario + " --backend host -q --telemetry-device 0 --out " + out)
                .code == 0);
    const auto c = only_case(out);
    const auto& tel = c["info"]["telemetry"];
    CHECK(tel["before"]["clock_event_reasons"] == nlohmann::json::array({"gpu_idle"}));
    CHECK(has(tel["reasons_seen"], "hw_thermal_slowdown"));
    CHECK(tel["throttled"] == true);
    REQUIRE(c.contains("warnings"));
    CHECK_THAT(c["warnings"].dump(),
               Catch::Contains("throttled during the case (hw_thermal_slowdown)"));
  }
  SECTION("--discard-on-throttle retakes throttled samples, then keeps them with a warning") {
    const telemetry_env throttle("FAKE_NVML_THROTTLE_AFTER", "0");  // throttled throughout
    const auto out = (dir / "discarded.json").string();
    REQUIRE(run_pinbench("run " + scenario +
                         " --backend host -q --telemetry-device 0 --discard-on-throttle --out " +
                         out)
                .code == 0);
    const auto c = only_case(out);
    const auto& tel = c["info"]["telemetry"];
    CHECK(tel["throttled"] == true);
    CHECK(tel["discarded_samples"] == 3);  // min_samples retakes, then the samples are kept
    CHECK(c["metrics"]["bandwidth"]["summary"]["n"] == 3);
    REQUIRE(c["warnings"].size() == 1);  // one warning says all of it
    CHECK_THAT(c["warnings"][0].get<std::string>(),
               Catch::Contains("3 samples taken under it were discarded and taken again, then 3 "
                               "more were kept (it stayed throttled)"));
  }
}

TEST_CASE("run --telemetry-device takes auto, off or an index", "[cli][telemetry]") {
  const auto o = run_pinbench("run builtin:transfer-modes --backend host --telemetry-device gpu0");
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("expected auto, off or an NVML device index"));
}

TEST_CASE("a GPU asked for and not watched is a run warning, not only a line in each case",
          "[cli][telemetry]") {
  const telemetry_env lib("PINBENCH_NVML_LIBRARY", fake_nvml_library());
  const auto scenario = small_transfer_scenario("telemetry-unwatched");
  const auto out = (std::filesystem::path(scenario).parent_path() / "r.json").string();
  REQUIRE(run_pinbench("run " + scenario + " --backend host -q --telemetry-device 9 --out " + out)
              .code == 0);
  std::ifstream in(out);
  const auto r = nlohmann::json::parse(in);
  CHECK_THAT(
      r["environment"]["warnings"].dump(),
      Catch::Contains("no GPU telemetry (clocks, throttling) in this run: no NVML device 9"));
  CHECK(r["scenarios"][0]["cases"][0]["info"]["telemetry"]["available"] == false);
}

}  // namespace pinbench::testing
