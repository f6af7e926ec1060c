// NVML telemetry of the device the CUDA backend measures: found by its PCI bus id, with clocks
// and a PCIe link. Where the machine has no NVML the test says so (WARN) and checks the reason.
#include <catch2/catch.hpp>

#include <string>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "device/telemetry/telemetry.hpp"
#include "result/result.hpp"
#include "run/case_telemetry.hpp"

using namespace pinbench;

TEST_CASE("the CUDA device's own NVML device is watched around a case", "[gpu][telemetry]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  REQUIRE(dev->describe().pci_bus_id.has_value());
  run::case_telemetry telemetry(*dev, "auto", false);
  result::case_result r;
  telemetry.begin();
  telemetry.end(r);
  const auto& t = r.extra["telemetry"];
  if (t.contains("available")) {
    WARN("no NVML telemetry: " << t["reason"].get<std::string>());
    CHECK_FALSE(t["reason"].get<std::string>().empty());
    return;
  }
  CHECK(t["before"]["sm_clock_max_mhz"].get<unsigned>() > 0);
  CHECK(t["after"]["pcie_width_max"].get<unsigned>() > 0);
  CHECK(t["discarded_samples"] == 0);
}

TEST_CASE("NVML gives the CUDA device's link ceiling where sysfs cannot", "[gpu][telemetry]") {
  auto dev = device::open_platform(device::backend_choice::cuda).open_home();
  REQUIRE(dev->describe().pci_bus_id.has_value());
  const auto c = device::telemetry::nvml_link_ceiling(*dev->describe().pci_bus_id);
  if (!c.gbps) {
    WARN("no NVML link: " << c.reason);
    CHECK_FALSE(c.reason.empty());
    return;
  }
  CHECK(*c.gbps > 1.0);
  CHECK_THAT(c.source, Catch::Contains("(NVML, "));
  // Where sysfs answers too, both read the same link.
  const auto sysfs = device::read_link_ceiling(*dev->describe().pci_bus_id);
  if (sysfs.gbps) CHECK(*sysfs.gbps == Approx(*c.gbps).epsilon(0.01));
}
