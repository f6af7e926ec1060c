// NUMA topology read from sysfs fixture trees (one node, two nodes, a device without a node,
// missing files), `--numa` parsing, and placement on this machine, whatever it allows.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "device/numa.hpp"
#include "device/numa_placement.hpp"
#include "device/pci_address.hpp"
#include "scratch_dir.hpp"

using namespace pinbench;
using namespace pinbench::device;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A sysfs tree: the online nodes with their cpu lists, and one PCI device.
void make_sysfs(const fs::path& root, const std::string& online,
                const std::vector<std::pair<int, std::string>>& nodes) {
  put(root / "devices/system/node/online", online + "\n");
  for (const auto& [node, cpus] : nodes)
    put(root / ("devices/system/node/node" + std::to_string(node)) / "cpulist", cpus + "\n");
}

void make_gpu(const fs::path& root, const std::string& address, const std::string& numa_node,
              const std::string& local_cpus) {
  const auto dir = root / "bus/pci/devices" / address;
  put(dir / "numa_node", numa_node + "\n");
  if (!local_cpus.empty()) put(dir / "local_cpulist", local_cpus + "\n");
}

description gpu_at(const std::string& bus_id) {
  description d;
  d.emulated = false;
  d.pci_bus_id = bus_id;
  return d;
}

description host_device() {
  description d;
  d.emulated = true;
  return d;
}

}  // namespace

TEST_CASE("numa: cpu lists as sysfs writes them", "[device][numa]") {
  CHECK(parse_cpulist("0-3") == std::vector<int>{0, 1, 2, 3});
  CHECK(parse_cpulist("0-1,32-33") == std::vector<int>{0, 1, 32, 33});
  CHECK(parse_cpulist(" 5 , 2\n") == std::vector<int>{2, 5});
  CHECK(parse_cpulist("0-7:2") == std::vector<int>{0, 2, 4, 6});
  CHECK(parse_cpulist("3,1-3") == std::vector<int>{1, 2, 3});
  CHECK(parse_cpulist("") == std::vector<int>{});
  CHECK(parse_cpulist("\n") == std::vector<int>{});
  for (const char* bad :
       {"a", "1-", "-1", "3-1", "1,,2", "0-7:0", "4:2", "1-2-3", "0x1", "0-99999999"}) {
    INFO(bad);
    CHECK_FALSE(parse_cpulist(bad).has_value());
  }
}

TEST_CASE("numa: the PCI address in CUDA's, NVML's and sysfs's spelling", "[device][numa]") {
  CHECK(sysfs_pci_address("0000:17:00.0") == "0000:17:00.0");
  CHECK(sysfs_pci_address("00000000:17:00.0") == "0000:17:00.0");
  CHECK(sysfs_pci_address("00000000:AB:1F.7") == "0000:ab:1f.7");
  CHECK(sysfs_pci_address("17:00.0").empty());
}

TEST_CASE("numa: a two-node machine, the GPU on node 1", "[device][numa]") {
  testing::scratch_dir dir("numa-two");
  const auto root = dir.path().string();
  make_sysfs(dir.path(), "0-1", {{0, "0-7,16-23"}, {1, "8-15,24-31"}});
  make_gpu(dir.path(), "0000:c1:00.0", "1", "8-11");
  CHECK(online_nodes(root) == std::vector<int>{0, 1});
  CHECK(node_cpulist(1, root) == "8-15,24-31");
  CHECK_FALSE(node_cpulist(2, root).has_value());

  // NVML's and CUDA's spelling of the bus id, upper case: sysfs's folder is lower case.
  const pci_numa pci = read_pci_numa("00000000:C1:00.0", root);
  CHECK(pci.node == 1);
  CHECK(pci.local_cpus == "8-11");
  CHECK(pci.reason.empty());

  SECTION("auto: the GPU's node and its local cpus") {
    const numa_target t = resolve_numa({}, gpu_at("00000000:C1:00.0"), root);
    CHECK(t.node == 1);
    CHECK(t.cpus == "8-11");
    CHECK(t.requested == "auto");
    CHECK(t.reason.find("node 1") != std::string::npos);
  }
  SECTION("--numa 0: that node's cpus, whatever the GPU's") {
    const numa_target t =
        resolve_numa(parse_numa_request("0", online_nodes(root)), gpu_at("00000000:C1:00.0"), root);
    CHECK(t.node == 0);
    CHECK(t.cpus == "0-7,16-23");
    CHECK(t.requested == "0");
  }
  SECTION("none: no node") {
    const numa_target t =
        resolve_numa(parse_numa_request("none", online_nodes(root)), gpu_at("0000:c1:00.0"), root);
    CHECK_FALSE(t.node.has_value());
    CHECK(t.requested == "none");
    CHECK_FALSE(t.reason.empty());
  }
  SECTION("the host backend's emulated device: node 0") {
    const numa_target t = resolve_numa({}, host_device(), root);
    CHECK(t.node == 0);
    CHECK(t.cpus == "0-7,16-23");
    CHECK(t.reason.find("host backend") != std::string::npos);
  }
  SECTION("a GPU whose numa_node is -1: no node on a two-node machine, and why") {
    make_gpu(dir.path(), "0000:17:00.0", "-1", "");
    const pci_numa none = read_pci_numa("0000:17:00.0", root);
    CHECK_FALSE(none.node.has_value());
    CHECK(none.reason.find("-1") != std::string::npos);
    const numa_target t = resolve_numa({}, gpu_at("0000:17:00.0"), root);
    CHECK_FALSE(t.node.has_value());
    CHECK(t.reason.find("--numa N") != std::string::npos);
  }
  SECTION("a GPU sysfs does not list: no node, the missing file named") {
    const numa_target t = resolve_numa({}, gpu_at("0000:99:00.0"), root);
    CHECK_FALSE(t.node.has_value());
    CHECK(t.reason.find("0000:99:00.0/numa_node") != std::string::npos);
  }
}

TEST_CASE("numa: a one-node machine gives node 0 even when the GPU says -1", "[device][numa]") {
  testing::scratch_dir dir("numa-one");
  const auto root = dir.path().string();
  make_sysfs(dir.path(), "0", {{0, "0-3"}});
  make_gpu(dir.path(), "0000:17:00.0", "-1", "0-3");
  const numa_target t = resolve_numa({}, gpu_at("00000000:17:00.0"), root);
  CHECK(t.node == 0);
  CHECK(t.cpus == "0-3");
  CHECK(t.reason.find("one NUMA node") != std::string::npos);
}

TEST_CASE("numa: no NUMA information at all", "[device][numa]") {
  testing::scratch_dir dir("numa-none");
  const auto root = dir.path().string();  // an empty tree: no node folder, no PCI devices
  CHECK(online_nodes(root).empty());
  for (const description& d : {host_device(), gpu_at("0000:17:00.0")}) {
    const numa_target t = resolve_numa({}, d, root);
    CHECK_FALSE(t.node.has_value());
    CHECK(t.reason.find("no NUMA information") != std::string::npos);
  }
  // --numa N cannot name a node of a machine that reports none.
  CHECK_THROWS_AS(parse_numa_request("0", online_nodes(root)), input_error);
}

TEST_CASE("numa: --numa parsing names the option and the online nodes", "[device][numa]") {
  const std::vector<int> online{0, 1};
  CHECK(parse_numa_request("auto", online).how == numa_request::mode::automatic);
  CHECK(parse_numa_request("none", online).how == numa_request::mode::none);
  const auto one = parse_numa_request("1", online);
  CHECK(one.how == numa_request::mode::node);
  CHECK(one.node == 1);
  CHECK(one.text() == "1");
  for (const char* bad : {"", "Auto", "-1", "1.5", " 1", "node1", "2"}) {
    INFO(bad);
    try {
      (void)parse_numa_request(bad, online);
      FAIL("accepted");
    } catch (const input_error& e) {
      CHECK(e.json_path() == "--numa");
      if (std::string(bad) == "2") CHECK(e.message().find("online: 0, 1") != std::string::npos);
    }
  }
}

TEST_CASE("numa: placement on this machine is consistent, and undone at scope exit",
          "[device][numa]") {
  // Whatever this machine allows (a container may refuse set_mempolicy): placed must agree with
  // what was observed, and the thread gets its affinity back.
  const auto nodes = online_nodes();
  if (nodes.empty()) return;  // no sysfs NUMA information here: nothing to place on
  numa_target t;
  t.node = nodes.front();
  t.cpus = node_cpulist(nodes.front()).value_or("");
  t.reason = "test";
  t.requested = std::to_string(nodes.front());

  cpu_set_t before;
  CPU_ZERO(&before);
  REQUIRE(::sched_getaffinity(0, sizeof before, &before) == 0);
  // The thread's memory policy before the scope (mode and node mask), where the kernel tells it.
  const auto policy = [] {
    int mode = -1;
    std::array<unsigned long, 16> mask{};
    const long rc = ::syscall(SYS_get_mempolicy, &mode, mask.data(), mask.size() * 64, nullptr, 0);
    return std::make_tuple(rc, mode, mask);
  };
  const auto policy_before = policy();
  {
    numa_scope scope(t);
    std::vector<char> buffer(1 << 20, 1);  // touched under the scope's policy
    scope.observe(buffer.data());
    const auto r = scope.record();
    CHECK(r.node == nodes.front());
    CHECK(r.requested == t.requested);
    CHECK(r.cpus == t.cpus);
    if (r.placed) {
      CHECK(r.buffer_node == nodes.front());
      CHECK(r.reason == "test");
    } else {
      CHECK(r.reason.find("not placed: ") != std::string::npos);
    }
  }
  cpu_set_t after;
  CPU_ZERO(&after);
  REQUIRE(::sched_getaffinity(0, sizeof after, &after) == 0);
  CHECK(CPU_EQUAL(&before, &after));
  CHECK(policy() == policy_before);
}

TEST_CASE("numa: no node, no placement: placed is false with the target's reason",
          "[device][numa]") {
  numa_target t;  // the default: nothing asked
  numa_scope scope(t);
  int on_stack = 0;
  scope.observe(&on_stack);
  const auto r = scope.record();
  CHECK_FALSE(r.node.has_value());
  CHECK_FALSE(r.placed);
  CHECK(r.requested == "none");
  CHECK_FALSE(r.buffer_node.has_value());
}
