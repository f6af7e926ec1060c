// `pinbench info`: the environment that results record (backends, GPU, PCIe, host, pin limits).
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "collective/collective.hpp"
#include "commands.hpp"
#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "core/units.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "device/telemetry/telemetry.hpp"
#include "dist/communicator.hpp"
#include "run/runner.hpp"
#include "run/telemetry_json.hpp"

namespace pinbench::app {

namespace {

struct info_args {
  std::string format = "text";
};

std::string text_of(const nlohmann::json& j) {
  if (j.is_null()) return "unknown";
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

std::string bytes_or(const nlohmann::json& j, const char* when_null) {
  if (j.is_number_unsigned() || j.is_number_integer()) return format_bytes(j.get<std::uint64_t>());
  return when_null;
}

// "1980/1980" (now/max), "?" for what NVML did not say.
template <class T>
std::string pair_of(const std::optional<T>& now, const std::optional<T>& max) {
  const auto one = [](const std::optional<T>& v) { return v ? fmt::format("{}", *v) : "?"; };
  return one(now) + "/" + one(max);
}

void print_telemetry(const device::telemetry::reading& t) {
  std::printf("telemetry (NVML)\n");
  if (!t.available) {
    std::printf("  unavailable: %s\n", t.reason.c_str());
    return;
  }
  std::printf("  library     %s\n", t.library.c_str());
  if (!t.missing.empty())
    std::printf("  missing     %s\n", fmt::format("{}", fmt::join(t.missing, ", ")).c_str());
  for (const auto& d : t.devices) {
    std::printf("  gpu %d       %s (%s)\n", d.index, d.name.value_or("?").c_str(),
                d.pci_bus_id.value_or("?").c_str());
    std::printf("    clocks    sm %s MHz, mem %s MHz (now/max)\n",
                pair_of(d.sm_clock_mhz, d.sm_clock_max_mhz).c_str(),
                pair_of(d.mem_clock_mhz, d.mem_clock_max_mhz).c_str());
    const auto reasons = d.clock_event_reasons
                             ? device::telemetry::reason_names(*d.clock_event_reasons)
                             : std::vector<std::string>{"?"};
    std::printf("    reasons   %s\n",
                reasons.empty() ? "none" : fmt::format("{}", fmt::join(reasons, ", ")).c_str());
    std::printf("    power     %s, temperature %s\n",
                d.power_w ? fmt::format("{:.1f} W", *d.power_w).c_str() : "? W",
                d.temperature_c ? fmt::format("{} C", *d.temperature_c).c_str() : "? C");
    std::printf("    pcie      gen %s x%s (now/max)\n", pair_of(d.pcie_gen, d.pcie_gen_max).c_str(),
                pair_of(d.pcie_width, d.pcie_width_max).c_str());
  }
}

int info(const info_args& a) {
  nlohmann::json out;
  const auto cuda = device::cuda_availability();
  const std::string host_name(device::to_string(device::platform_kind::host));
  const std::string cuda_name(device::to_string(device::platform_kind::cuda));
  out["backends"] = {{host_name, {{"usable", true}}},
                     {cuda_name, {{"usable", cuda.usable}, {"reason", cuda.reason}}}};
  if (cuda.usable) {
    try {
      out["device"] = run::device_json(
          device::open_platform(device::backend_choice::cuda).open_home()->describe());
    } catch (const std::exception& e) {
      out["backends"][cuda_name] = {{"usable", false}, {"reason", e.what()}};
    }
  }
  out["host"] = read_host_info();
  // Many GPUs and many processes: what the collective kinds would load, and the launch, if any.
  const auto nccl = collective::nccl_availability();
  out["nccl"] =
      nccl.usable
          ? nlohmann::json{{"usable", true}, {"library", nccl.library}, {"version", nccl.version}}
          : nlohmann::json{{"usable", false}, {"reason", nccl.reason}};
  const std::string mpi = dist::mpi_unavailable_reason();
  out["mpi"] = mpi.empty() ? nlohmann::json{{"usable", true}}
                           : nlohmann::json{{"usable", false}, {"reason", mpi}};
  const auto telemetry = device::telemetry::read_all();
  out["telemetry"] = run::telemetry_json(telemetry);
  const auto launch = dist::detect_launch();
  out["launch"] = {{"launcher", std::string(to_string(launch.launcher))},
                   {"rank", launch.rank},
                   {"size", launch.size},
                   {"local_rank", launch.local_rank},
                   {"local_size", launch.local_size}};
  // The transport `run` would use here, and why; a launch whose transport cannot be had says
  // why not instead (info itself never fails on it).
  std::string transport_line;
  try {
    const auto choice = dist::choose_transport(launch);
    out["launch"]["transport"] = std::string(to_string(choice.transport));
    out["launch"]["transport_reason"] = choice.why;
    transport_line = fmt::format("{} ({})", to_string(choice.transport), choice.why);
    if (choice.transport == dist::transport_kind::tcp) {
      out["launch"]["rendezvous"] = fmt::format("{}:{}", choice.host, choice.port);
      transport_line += fmt::format(", rank 0 listens at {}:{}", choice.host, choice.port);
    }
  } catch (const error& e) {
    out["launch"]["transport"] = nullptr;
    out["launch"]["transport_reason"] = e.what();
    transport_line = fmt::format("none: {}", e.what());
  }
  if (a.format == "json") {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("backends\n");
  std::printf("  %-6s usable (emulated device: no GPU figures)\n",
              std::string(device::to_string(device::platform_kind::host)).c_str());
  std::printf("  %-6s %s\n", std::string(device::to_string(device::platform_kind::cuda)).c_str(),
              cuda.usable ? "usable" : ("not usable: " + cuda.reason).c_str());
  std::printf("collectives\n");
  std::printf("  nccl   %s\n", nccl.usable
                                   ? fmt::format("{} ({})", nccl.version, nccl.library).c_str()
                                   : ("not usable: " + nccl.reason).c_str());
  std::printf("  mpi    %s\n",
              mpi.empty() ? "usable (libpinbench_mpi.so loads)" : ("not usable: " + mpi).c_str());
  std::printf("  launch %s\n", launch.launcher == dist::launcher_kind::none
                                   ? "none (one process)"
                                   : fmt::format("{}: rank {} of {}, local rank {} of {}",
                                                 to_string(launch.launcher), launch.rank,
                                                 launch.size, launch.local_rank, launch.local_size)
                                         .c_str());
  std::printf("  transport %s\n", transport_line.c_str());
  if (out.contains("device")) {
    const auto& d = out["device"];
    std::printf("device\n");
    std::printf("  name        %s\n", text_of(d.value("name", nlohmann::json())).c_str());
    std::printf("  uuid        %s\n", text_of(d.value("uuid", nlohmann::json())).c_str());
    std::printf("  driver      %s\n", text_of(d.value("driver", nlohmann::json())).c_str());
    std::printf("  runtime     %s\n", text_of(d.value("runtime", nlohmann::json())).c_str());
    std::printf("  memory      %s\n",
                bytes_or(d.value("memory_bytes", nlohmann::json()), "unknown").c_str());
    const auto pcie = d.value("pcie", nlohmann::json());
    if (pcie.is_object())
      std::printf("  pcie        gen %s x%s (max gen %s x%s)\n",
                  text_of(pcie.value("gen", nlohmann::json())).c_str(),
                  text_of(pcie.value("width", nlohmann::json())).c_str(),
                  text_of(pcie.value("max_gen", nlohmann::json())).c_str(),
                  text_of(pcie.value("max_width", nlohmann::json())).c_str());
    else
      std::printf("  pcie        unknown\n");
  }
  print_telemetry(telemetry);
  const auto& h = out["host"];
  std::printf("host\n");
  std::printf("  cpu         %s\n", text_of(h.value("cpu", nlohmann::json())).c_str());
  std::printf("  cores       %s\n", text_of(h.value("cores", nlohmann::json())).c_str());
  std::printf("  memory      %s (available %s)\n",
              bytes_or(h.value("memory_bytes", nlohmann::json()), "unknown").c_str(),
              bytes_or(h.value("available_bytes", nlohmann::json()), "unknown").c_str());
  std::printf("  os          %s\n", text_of(h.value("os", nlohmann::json())).c_str());
  std::printf("  hostname    %s\n", text_of(h.value("hostname", nlohmann::json())).c_str());
  std::printf("  memlock     %s (RLIMIT_MEMLOCK; caps pinned memory)\n",
              bytes_or(h.value("memlock_limit_bytes", nlohmann::json()), "unlimited").c_str());
  std::printf(
      "  /dev/shm    %s%s\n", bytes_or(h.value("shm_bytes", nlohmann::json()), "absent").c_str(),
      h.value("in_container", false) ? " (in a container: shm and memlock are often small)" : "");
  return 0;
}

}  // namespace

runner add_info(CLI::App& app) {
  auto a = std::make_shared<info_args>();
  auto* sub = app.add_subcommand(
      "info", "Show the environment results record: backends, GPU, PCIe, host, pin limits");
  sub->add_option("--format", a->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [a] { return info(*a); };
}

}  // namespace pinbench::app
