#include "core/sysinfo.hpp"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/text.hpp"

namespace pinbench {

namespace {

// The first "model name" of /proc/cpuinfo; other architectures name the CPU differently.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, fallback;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto key = trim(std::string_view(line).substr(0, colon));
    const auto value = trim(std::string_view(line).substr(colon + 1));
    if (value.empty()) continue;
    if (key == "model name") return std::string(value);
    if (fallback.empty() && (key == "Hardware" || key == "Processor" || key == "cpu"))
      fallback = std::string(value);
  }
  return fallback.empty() ? std::string("unknown CPU") : fallback;
}

// cpufreq's cpuinfo_max_freq (kHz) of CPU 0, else the first "cpu MHz" of /proc/cpuinfo (a VM's
// nominal clock; other architectures may have neither).
std::optional<double> cpu_mhz() {
  {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (in >> khz && khz > 0) return khz / 1000;
  }
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || trim(std::string_view(line).substr(0, colon)) != "cpu MHz")
      continue;
    char* end = nullptr;
    const std::string value(trim(std::string_view(line).substr(colon + 1)));
    const double mhz = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && mhz > 0) return mhz;
    return std::nullopt;
  }
  return std::nullopt;
}

// MemTotal and MemAvailable, in bytes ("MemTotal:  24568812 kB").
void read_meminfo(host_info& h) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    const std::uint64_t bytes = trim(unit) == "kB" ? value * 1024 : value;
    if (key == "MemTotal:") h.memory_bytes = bytes;
    if (key == "MemAvailable:") h.available_bytes = bytes;
  }
}

std::optional<std::uint64_t> limit_bytes(rlim_t v) {
  if (v == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

bool exists(const char* path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool detect_container() {
  if (exists("/.dockerenv") || exists("/run/.containerenv")) return true;
  if (std::getenv("container") != nullptr) return true;  // set by podman, systemd-nspawn, lxc
  std::ifstream in("/proc/1/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    for (const char* marker : {"docker", "kubepods", "containerd", "libpod", "lxc"})
      if (line.find(marker) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

host_info read_host_info() {
  host_info h;
  h.cpu = cpu_model();
  h.cpu_mhz = cpu_mhz();
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cores = online > 0 ? static_cast<unsigned>(online) : 1u;
  read_meminfo(h);
  if (h.memory_bytes == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      h.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }

  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;

  utsname u{};
  if (::uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;

  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0) {
    h.memlock_soft_bytes = limit_bytes(lim.rlim_cur);
    h.memlock_hard_bytes = limit_bytes(lim.rlim_max);
  }

  struct statvfs fs {};
  if (::statvfs("/dev/shm", &fs) == 0)
    h.shm_bytes = static_cast<std::uint64_t>(fs.f_blocks) * static_cast<std::uint64_t>(fs.f_frsize);

  h.in_container = detect_container();
  return h;
}

process_info read_process_info() {
  process_info p;
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0 && usage.ru_maxrss > 0)
    p.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
  std::error_code ec;
  std::uint64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  // The iterator holds a descriptor of its own while it reads the directory.
  if (!ec && n > 0) p.open_fds = n - 1;
  return p;
}

void to_json(nlohmann::json& j, const host_info& h) {
  const auto optional = [](const std::optional<std::uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  j = nlohmann::json{{"cpu", h.cpu},
                     {"cpu_mhz", h.cpu_mhz ? nlohmann::json(*h.cpu_mhz) : nlohmann::json(nullptr)},
                     {"cores", h.cores},
                     {"memory_bytes", h.memory_bytes},
                     {"available_bytes", h.available_bytes},
                     {"hostname", h.hostname},
                     {"os", h.os},
                     {"memlock_limit_bytes", optional(h.memlock_soft_bytes)},
                     {"memlock_hard_limit_bytes", optional(h.memlock_hard_bytes)},
                     {"shm_bytes", optional(h.shm_bytes)},
                     {"in_container", h.in_container}};
}

}  // namespace pinbench
