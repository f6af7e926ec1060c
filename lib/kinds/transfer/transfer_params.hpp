// Kind `transfer`'s params for one case, parsed once when the scenario is expanded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kinds/params.hpp"
#include "measure/case.hpp"

namespace pinbench::kinds::transfer {

/// Which way data moves.
enum class copy_direction { h2d, d2h, bidirectional };
inline constexpr named<copy_direction> copy_directions[] = {
    {"h2d", copy_direction::h2d},
    {"d2h", copy_direction::d2h},
    {"bidirectional", copy_direction::bidirectional}};
inline constexpr choice<copy_direction> direction_choice{"direction", copy_directions,
                                                         copy_direction::h2d};

/// The host buffer copied from or to.
enum class host_memory { pageable, pinned, pinned_wc, registered, pin_on_the_fly };
inline constexpr named<host_memory> host_memories[] = {
    {"pageable", host_memory::pageable},
    {"pinned", host_memory::pinned},
    {"pinned_wc", host_memory::pinned_wc},
    {"registered", host_memory::registered},
    {"pin_on_the_fly", host_memory::pin_on_the_fly}};
inline constexpr choice<host_memory> memory_choice{"memory", host_memories, host_memory::pinned};

/// Whether the caller waits for each copy.
enum class copy_mode { blocking, non_blocking };
inline constexpr named<copy_mode> copy_modes[] = {{"blocking", copy_mode::blocking},
                                                  {"non_blocking", copy_mode::non_blocking}};
inline constexpr choice<copy_mode> mode_choice{"mode", copy_modes, copy_mode::non_blocking};

struct transfer_params final : measure::case_params {
  copy_direction direction = direction_choice.default_value();
  host_memory memory = memory_choice.default_value();
  copy_mode mode = mode_choice.default_value();
  std::uint64_t bytes = 0;
  int copies = 1;  ///< per sample and lane, resolved: copies_per_sample 0 means the auto batch
  std::int64_t overlap_compute_ns = 0;
  bool verify = true;

  [[nodiscard]] bool blocking() const { return mode == copy_mode::blocking; }
  [[nodiscard]] bool pin_on_the_fly() const { return memory == host_memory::pin_on_the_fly; }
  /// The user's buffer itself is page-locked (pinned, pinned_wc, registered).
  [[nodiscard]] bool page_locked_source() const {
    return memory == host_memory::pinned || memory == host_memory::pinned_wc ||
           memory == host_memory::registered;
  }
  /// The copies of a sample are queued behind a gate kernel (nvbandwidth's method), so that
  /// enqueueing stays out of the timed window: asynchronous copies from page-locked memory.
  /// Copies that hold the caller (blocking, pageable, pin_on_the_fly) cannot be gated: they
  /// would wait for the gate themselves. The one statement of the rule.
  [[nodiscard]] bool gated() const { return !blocking() && page_locked_source(); }
};

/// The case's params (complete and normalised) as transfer_params; throws input_error naming
/// `source` and the param for a combination that cannot run.
[[nodiscard]] std::shared_ptr<const measure::case_params> parse_params(const nlohmann::json& params,
                                                                       const std::string& source);

}  // namespace pinbench::kinds::transfer
