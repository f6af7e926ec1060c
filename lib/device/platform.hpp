// The device platform a run measures on, chosen once: which backend (`--backend`), how many
// devices this process may drive, which one is its own under a launch, and the host backend's
// options (`--host-capacity`, `--host-fault`). The runner and the engines open devices through
// it; nothing after it looks at the backend's name to decide anything.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/backend.hpp"

namespace pinbench::device {

/// `--backend`: auto (cuda when usable, else host), cuda, host.
enum class backend_choice { automatic, cuda, host };

/// "auto", "cuda" or "host" as a choice; nothing for any other text.
[[nodiscard]] std::optional<backend_choice> parse_backend_choice(std::string_view text) noexcept;
/// What `--backend` accepts, for the command line's check: "auto" and every backend's name.
[[nodiscard]] std::vector<std::string> backend_choice_names();

/// One `--host-fault` switch applied to `options`: refuse-pinning, no-host-register,
/// gate-timeouts=N (N >= 1), slow=P% (0 < P <= 1000, or a fraction up to 10). Returns what was
/// expected when the text is none of them ("" when applied).
[[nodiscard]] std::string apply_host_fault(std::string_view fault, backend_options& options);

/// `--host-capacity SIZE` and every `--host-fault` as backend options; throws input_error naming
/// the option for a bad value.
[[nodiscard]] backend_options parse_host_options(const std::string& host_capacity,
                                                 const std::vector<std::string>& host_faults);

/// True when any host fault switch is on: such a run must use the host backend.
[[nodiscard]] bool any_host_fault(const backend_options& options) noexcept;

class platform {
 public:
  [[nodiscard]] platform_kind kind() const noexcept { return kind_; }
  /// The backend's name, for the result and messages.
  [[nodiscard]] std::string_view name() const noexcept { return to_string(kind_); }
  [[nodiscard]] bool emulated() const noexcept { return kind_ == platform_kind::host; }
  /// How many devices this process may drive: the CUDA devices it sees, or the host backend's
  /// emulated ones.
  [[nodiscard]] int device_count() const noexcept { return device_count_; }
  /// The device this process measures on: 0, or under a launch its local rank's (wrapping when
  /// a node has more processes than devices, which then share one).
  [[nodiscard]] int home_index() const noexcept { return home_index_; }
  /// Opens device `index` (0 <= index < device_count()) as a backend of its own.
  [[nodiscard]] std::unique_ptr<backend> open(int index) const;
  [[nodiscard]] std::unique_ptr<backend> open_home() const { return open(home_index_); }

  /// A platform of the host backend with `devices` emulated devices (tests).
  [[nodiscard]] static platform host(const backend_options& options = {},
                                     int devices = max_emulated_devices);

 private:
  friend platform open_platform(backend_choice, const backend_options&, int);
  platform(platform_kind kind, const backend_options& options, int device_count, int home_index)
      : kind_(kind), options_(options), device_count_(device_count), home_index_(home_index) {}

  platform_kind kind_;
  backend_options options_;
  int device_count_;
  int home_index_;
};

/// The platform a run measures on. `local_rank` (>= 0 under a launch, else -1) picks this
/// process's device. Throws environment_error when cuda is chosen and is not usable (exit 3),
/// and input_error when host faults are given to a CUDA platform.
[[nodiscard]] platform open_platform(backend_choice choice, const backend_options& options = {},
                                     int local_rank = -1);

}  // namespace pinbench::device
