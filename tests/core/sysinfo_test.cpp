// The host facts that results record.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/sysinfo.hpp"

using namespace pinbench;

TEST_CASE("read_host_info reports this machine", "[core][sysinfo]") {
  const host_info h = read_host_info();
  CHECK_FALSE(h.cpu.empty());
  CHECK(h.cores >= 1);
  CHECK(h.cores == static_cast<unsigned>(::sysconf(_SC_NPROCESSORS_ONLN)));
  CHECK(h.memory_bytes > 0);
  CHECK(h.available_bytes <= h.memory_bytes);
  if (h.cpu_mhz) CHECK(*h.cpu_mhz > 0);  // absent on some architectures and VMs
  CHECK_FALSE(h.hostname.empty());
  CHECK(h.os.rfind("Linux ", 0) == 0);

  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_MEMLOCK, &lim) == 0);
  if (lim.rlim_cur == RLIM_INFINITY)
    CHECK_FALSE(h.memlock_soft_bytes.has_value());
  else
    CHECK(h.memlock_soft_bytes == static_cast<std::uint64_t>(lim.rlim_cur));
  if (lim.rlim_max == RLIM_INFINITY)
    CHECK_FALSE(h.memlock_hard_bytes.has_value());
  else
    CHECK(h.memlock_hard_bytes == static_cast<std::uint64_t>(lim.rlim_max));
  if (::access("/.dockerenv", F_OK) == 0) CHECK(h.in_container);
}

TEST_CASE("host_info serialises with null for unlimited and absent", "[core][sysinfo]") {
  host_info h;
  h.cpu = "Test CPU";
  h.cores = 8;
  h.memory_bytes = 1ull << 34;
  h.available_bytes = 1ull << 33;
  h.hostname = "box";
  h.os = "Linux 6.1.0 x86_64";
  h.memlock_soft_bytes = 8u << 20;
  h.memlock_hard_bytes = std::nullopt;
  h.shm_bytes = std::nullopt;
  h.in_container = true;

  const nlohmann::json j = h;
  CHECK(j.at("cpu") == "Test CPU");
  CHECK(j.at("cores") == 8);
  CHECK(j.at("memory_bytes") == 1ull << 34);
  CHECK(j.at("available_bytes") == 1ull << 33);
  CHECK(j.at("hostname") == "box");
  CHECK(j.at("os") == "Linux 6.1.0 x86_64");
  CHECK(j.at("memlock_limit_bytes") == 8u << 20);
  CHECK(j.at("memlock_hard_limit_bytes").is_null());
  CHECK(j.at("shm_bytes").is_null());
  CHECK(j.at("in_container") == true);
  CHECK(j.at("cpu_mhz").is_null());  // not known
  CHECK(j.size() == 11);
  h.cpu_mhz = 2095.993;
  CHECK(nlohmann::json(h).at("cpu_mhz") == 2095.993);
}
