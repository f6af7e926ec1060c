// The host link of a PCI device and its ceiling (device/pci_link.hpp), read from sysfs fixture
// folders made in a scratch directory: the layout Linux has, a device under its port.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "device/pci_link.hpp"
#include "scratch_dir.hpp"

using namespace pinbench;
using namespace pinbench::device;
namespace fs = std::filesystem;

namespace {

// <root>/devices/pci0000:00/<port>/<address>, with <root>/bus/pci/devices/<address> linking to
// it as in Linux. Files are written only where a test asks for them.
class fake_sysfs {
 public:
  explicit fake_sysfs(const fs::path& root, const std::string& address = "0000:17:00.0")
      : root_(root),
        port_(root / "devices" / "pci0000:00" / "0000:00:01.0"),
        device_(port_ / address) {
    fs::create_directories(device_);
    fs::create_directories(root / "bus" / "pci" / "devices");
    fs::create_directory_symlink(
        fs::path("../../..") / "devices" / "pci0000:00" / "0000:00:01.0" / address,
        root / "bus" / "pci" / "devices" / address);
  }
  void device(const char* name, const std::string& text) const {
    std::ofstream(device_ / name) << text;
  }
  void port(const char* name, const std::string& text) const {
    std::ofstream(port_ / name) << text;
  }
  void link(const std::string& speed, const std::string& width) const {
    device("current_link_speed", speed + "\n");
    device("current_link_width", width + "\n");
    device("max_link_speed", speed + "\n");
    device("max_link_width", width + "\n");
  }
  [[nodiscard]] std::string root() const { return root_.string(); }

 private:
  fs::path root_, port_, device_;
};

}  // namespace

TEST_CASE("pci link: bus ids in CUDA's and NVML's spelling name the sysfs device", "[device]") {
  CHECK(sysfs_pci_address("0000:17:00.0") == "0000:17:00.0");      // CUDA
  CHECK(sysfs_pci_address("00000000:17:00.0") == "0000:17:00.0");  // NVML
  CHECK(sysfs_pci_address("00000000:AB:1F.7") == "0000:ab:1f.7");
  CHECK(sysfs_pci_address("0001:C1:00.0\n") == "0001:c1:00.0");
  CHECK(sysfs_pci_address("00010000:01:00.0") == "10000:01:00.0");
  CHECK(sysfs_pci_address("garbage").empty());
  CHECK(sysfs_pci_address("0000:19:00").empty());
  CHECK(sysfs_pci_address("").empty());
}

TEST_CASE("pci link: speed text -> generation", "[device]") {
  CHECK(pcie_gen_from_speed("2.5 GT/s PCIe") == 1);
  CHECK(pcie_gen_from_speed("5.0 GT/s PCIe") == 2);
  CHECK(pcie_gen_from_speed("8 GT/s") == 3);
  CHECK(pcie_gen_from_speed("8.0 GT/s PCIe\r\n") == 3);
  CHECK(pcie_gen_from_speed("16.0 GT/s PCIe\n") == 4);
  CHECK(pcie_gen_from_speed("16.0 GT/s") == 4);
  CHECK(pcie_gen_from_speed("32.0 GT/s PCIe") == 5);
  CHECK(pcie_gen_from_speed("64.0 GT/s PCIe") == 6);
  CHECK_FALSE(pcie_gen_from_speed("Unknown"));
  CHECK_FALSE(pcie_gen_from_speed("Unknown speed"));
  CHECK_FALSE(pcie_gen_from_speed("12 GT/s"));
  CHECK_FALSE(pcie_gen_from_speed("16"));
  CHECK_FALSE(pcie_gen_from_speed("16 MB/s"));
  CHECK_FALSE(pcie_gen_from_speed(""));
}

TEST_CASE("pci link: the ceiling is lanes x rate x encoding / 8, per direction", "[device]") {
  using Catch::Detail::Approx;
  CHECK(*pcie_gbps_per_direction(1, 16) == Approx(4.0));  // 2.5 x 16 x 8/10 / 8
  CHECK(*pcie_gbps_per_direction(2, 4) == Approx(2.0));   // 5 x 4 x 8/10 / 8
  CHECK(*pcie_gbps_per_direction(3, 16) == Approx(15.754).epsilon(1e-4));
  CHECK(*pcie_gbps_per_direction(4, 16) == Approx(31.508).epsilon(1e-4));
  CHECK(*pcie_gbps_per_direction(4, 8) == Approx(15.754).epsilon(1e-4));
  CHECK(*pcie_gbps_per_direction(5, 16) == Approx(63.015).epsilon(1e-4));
  CHECK(*pcie_gbps_per_direction(6, 16) == Approx(121.0));  // 64 x 16 x 242/256 / 8
  CHECK_FALSE(pcie_gbps_per_direction(0, 16));
  CHECK_FALSE(pcie_gbps_per_direction(8, 16));
  CHECK_FALSE(pcie_gbps_per_direction(5, 0));
  CHECK(pcie_encoding_name(2) == "8b/10b");
  CHECK(pcie_encoding_name(5) == "128b/130b");
  CHECK(pcie_encoding_name(6) == "FLIT 242/256");
}

TEST_CASE("pci link: ceilings read from sysfs fixtures", "[device]") {
  testing::scratch_dir dir("pci-link");
  const fs::path root = dir.path();
  using Catch::Detail::Approx;

  SECTION("gen5 x16, by NVML's spelling of the bus id") {
    fake_sysfs sys(root);
    sys.link("32.0 GT/s PCIe", "16");
    const auto c = read_link_ceiling("00000000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(63.015).epsilon(1e-4));
    CHECK(c.source == "PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per direction");
    CHECK(c.reason.empty());
    CHECK_FALSE(c.measure_host_memcpy);
  }
  SECTION("gen4 x8") {
    fake_sysfs sys(root);
    sys.link("16.0 GT/s PCIe", "8");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(15.754).epsilon(1e-4));
    CHECK(c.source == "PCIe gen4 x8 (sysfs, 128b/130b): 15.8 GB/s per direction");
  }
  SECTION("gen3 x16, old kernels' spelling without \"PCIe\"") {
    fake_sysfs sys(root);
    sys.link("8 GT/s", "16");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(15.754).epsilon(1e-4));
  }
  SECTION("gen6 x16 uses FLIT mode's 242/256") {
    fake_sysfs sys(root);
    sys.link("64.0 GT/s PCIe", "16");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(121.0));
    CHECK(c.source == "PCIe gen6 x16 (sysfs, FLIT 242/256): 121.0 GB/s per direction");
  }
  SECTION("an idle GPU trained down: the maximum is the ceiling, the current link is named") {
    fake_sysfs sys(root);
    sys.device("current_link_speed", "2.5 GT/s PCIe\n");
    sys.device("current_link_width", "16\n");
    sys.device("max_link_speed", "32.0 GT/s PCIe\n");
    sys.device("max_link_width", "16\n");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(63.015).epsilon(1e-4));
    CHECK(c.source ==
          "PCIe gen5 x16 (sysfs, 128b/130b): 63.0 GB/s per direction; the link read gen1 x16 at "
          "the time (an idle GPU trains down)");
  }
  SECTION("a gen5 device under a gen4 x8 port is capped by the port") {
    fake_sysfs sys(root);
    sys.link("32.0 GT/s PCIe", "16");
    sys.port("max_link_speed", "16.0 GT/s PCIe\n");
    sys.port("max_link_width", "8\n");
    const auto link = read_pcie_link("0000:17:00.0", sys.root());
    CHECK(link.port_max_gen == 4);
    CHECK(link.port_max_width == 8);
    const auto c = pcie_ceiling(link, "0000:17:00.0");
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(15.754).epsilon(1e-4));
    CHECK(c.source.rfind("PCIe gen4 x8 (sysfs, 128b/130b): 15.8 GB/s per direction", 0) == 0);
  }
  SECTION("only the current link readable: it stands in for the maximum") {
    fake_sysfs sys(root);
    sys.device("current_link_speed", "16.0 GT/s PCIe\n");
    sys.device("current_link_width", "x16\n");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    REQUIRE(c.gbps);
    CHECK(*c.gbps == Approx(31.508).epsilon(1e-4));
  }
  SECTION("no link files (NVLink-C2C, a container): no ceiling, with the reason") {
    fake_sysfs sys(root);
    const auto link = read_pcie_link("0000:17:00.0", sys.root());
    for (const auto& v : {link.gen, link.width, link.max_gen, link.max_width, link.port_max_gen})
      CHECK_FALSE(v.has_value());
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    CHECK_FALSE(c.gbps);
    CHECK(c.source.empty());
    CHECK_THAT(c.reason, Catch::Contains("no readable PCIe link for 0000:17:00.0") &&
                             Catch::Contains("NVLink-C2C"));
  }
  SECTION("odd text in the files reads as no link") {
    fake_sysfs sys(root);
    sys.link("Unknown", "garbage");
    const auto c = read_link_ceiling("0000:17:00.0", sys.root());
    CHECK_FALSE(c.gbps);
    CHECK_THAT(c.reason, Catch::Contains("no readable PCIe link"));
  }
  SECTION("a speed without a width is no ceiling") {
    fake_sysfs sys(root);
    sys.device("max_link_speed", "32.0 GT/s PCIe\n");
    sys.device("max_link_width", "0\n");
    CHECK_FALSE(read_link_ceiling("0000:17:00.0", sys.root()).gbps);
  }
  SECTION("a device sysfs does not have, and a text that is no bus id") {
    CHECK_FALSE(read_link_ceiling("0000:1a:00.0", root.string()).gbps);
    const auto c = read_link_ceiling("GPU-0", root.string());
    CHECK_FALSE(c.gbps);
    CHECK(c.reason == "\"GPU-0\" is not a PCI bus id");
  }
}
