// Facts about the host that results record and `pinbench info` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace pinbench {

struct host_info {
  std::string cpu;  ///< model name from /proc/cpuinfo
  /// The CPU's clock in MHz, as Google Benchmark's context reports it: cpufreq's maximum where
  /// the kernel has one, else the first "cpu MHz" of /proc/cpuinfo; nullopt where neither is.
  std::optional<double> cpu_mhz;
  unsigned cores = 0;  ///< online logical CPUs
  std::uint64_t memory_bytes = 0;
  std::uint64_t available_bytes = 0;  ///< MemAvailable
  std::string hostname;
  std::string os;  ///< "Linux 6.1.0 x86_64"
  /// RLIMIT_MEMLOCK soft/hard; nullopt = unlimited.
  std::optional<std::uint64_t> memlock_soft_bytes, memlock_hard_bytes;
  std::optional<std::uint64_t> shm_bytes;  ///< size of /dev/shm, nullopt when absent
  bool in_container = false;               ///< /.dockerenv or a container cgroup
};

[[nodiscard]] host_info read_host_info();

/// What this process holds, for the result's `process` block (a soak run compares them).
struct process_info {
  std::uint64_t peak_rss_bytes = 0;  ///< getrusage ru_maxrss: the high-water mark so far
  std::uint64_t open_fds = 0;        ///< entries of /proc/self/fd, the one reading it excluded
};
[[nodiscard]] process_info read_process_info();

/// `environment.host` block: cpu, cpu_mhz (null = unknown), cores, memory_bytes, hostname, os,
/// memlock_limit_bytes (null = unlimited), shm_bytes.
void to_json(nlohmann::json& j, const host_info& h);

}  // namespace pinbench
