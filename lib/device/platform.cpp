#include "device/platform.hpp"

#include <charconv>

#include "core/error.hpp"
#include "core/units.hpp"
#include "device/host/host_backend.hpp"
#ifdef PINBENCH_HAVE_CUDA
#include "device/cuda/cuda_backend.hpp"
#endif

namespace pinbench::device {

std::optional<backend_choice> parse_backend_choice(std::string_view text) noexcept {
  if (text == "auto") return backend_choice::automatic;
  const auto kind = parse_platform_kind(text);
  if (!kind) return std::nullopt;
  return *kind == platform_kind::cuda ? backend_choice::cuda : backend_choice::host;
}

std::vector<std::string> backend_choice_names() {
  return {"auto", std::string(to_string(platform_kind::cuda)),
          std::string(to_string(platform_kind::host))};
}

namespace {

// "gate-timeouts=N" (N >= 1) as a count; nothing for any other text.
std::optional<std::size_t> gate_timeouts(std::string_view value) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n == 0) return std::nullopt;
  return n;
}

}  // namespace

std::string apply_host_fault(std::string_view fault, backend_options& options) {
  constexpr std::string_view gate_prefix = "gate-timeouts=", slow_prefix = "slow=";
  if (fault == "refuse-pinning") {
    options.host_refuse_pinning = true;
    return {};
  }
  if (fault == "no-host-register") {
    options.host_no_register = true;
    return {};
  }
  if (fault.starts_with(gate_prefix)) {
    if (const auto n = gate_timeouts(fault.substr(gate_prefix.size()))) {
      options.host_gate_timeouts = *n;
      return {};
    }
  }
  if (fault.starts_with(slow_prefix)) {
    // How much longer every copy and compute takes: "20%", or a fraction ("0.2").
    const auto v = parse_fraction(fault.substr(slow_prefix.size()));
    if (v && *v > 0 && *v <= 10) {
      options.host_slowdown = *v;
      return {};
    }
  }
  return "expected refuse-pinning, no-host-register, gate-timeouts=N (N a positive count) or "
         "slow=P% (0 < P <= 1000), got \"" +
         std::string(fault) + "\"";
}

backend_options parse_host_options(const std::string& host_capacity,
                                   const std::vector<std::string>& host_faults) {
  backend_options options;
  if (!host_capacity.empty()) {
    const auto cap = parse_bytes(host_capacity);
    if (!cap || *cap == 0)
      throw input_error(
          {}, "--host-capacity",
          "expected a positive size such as \"16GiB\", got \"" + host_capacity + "\"");
    options.host_device_capacity = *cap;
  }
  for (const auto& f : host_faults)
    if (auto problem = apply_host_fault(f, options); !problem.empty())
      throw input_error({}, "--host-fault", problem);
  return options;
}

bool any_host_fault(const backend_options& o) noexcept {
  return o.host_refuse_pinning || o.host_no_register || o.host_gate_timeouts > 0 ||
         o.host_slowdown > 0;
}

std::unique_ptr<backend> platform::open(int index) const {
  auto o = options_;
  o.cuda_device = index;
  switch (kind_) {
    case platform_kind::host:
      return make_host_backend(o);
    case platform_kind::cuda:
#ifdef PINBENCH_HAVE_CUDA
      return make_cuda_backend(o);
#else
      break;  // open_platform gives no cuda platform to a build without CUDA
#endif
  }
  throw environment_error("pinbench was built without CUDA: no cuda backend to open");
}

platform platform::host(const backend_options& options, int devices) {
  return {platform_kind::host, options, devices, 0};
}

platform open_platform(backend_choice choice, const backend_options& options, int local_rank) {
  const auto cuda = choice == backend_choice::host ? availability{} : cuda_availability();
  if (choice == backend_choice::cuda && !cuda.usable)
    throw environment_error("--backend cuda: no usable CUDA device: " + cuda.reason);
  if (!cuda.usable || cuda.device_count <= 0)
    return {platform_kind::host, options, max_emulated_devices, 0};
  if (any_host_fault(options))
    throw input_error({}, "--host-fault",
                      "applies to the host backend only; add --backend host (this run would use "
                      "the cuda backend)");
  const int home = local_rank >= 0 ? local_rank % cuda.device_count : 0;
  return {platform_kind::cuda, options, cuda.device_count, home};
}

}  // namespace pinbench::device
