// What each scenario kind accepts: every param's name, type, allowed values and default.
// The single source of truth for validation, `--set`, `pinbench list` and the README.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench::scenario {

enum class param_type {
  size,          ///< bytes: "64MiB" or an integer; normalised to an unsigned integer of bytes
  duration,      ///< "500us", "2s"; normalised to an integer of nanoseconds
  integer,       ///< JSON integer
  number,        ///< JSON number
  boolean,       ///< JSON true/false
  string,        ///< free text
  enumeration,   ///< one of `choices`
  integer_list,  ///< JSON array of integers, each within min/max ([32, 48, 64]; may be empty)
};

struct param_spec {
  std::string name;  ///< dotted path for nested params ("dataset.sample_bytes")
  param_type type = param_type::string;
  nlohmann::json default_value;  ///< in the normalised form; null = required
  std::vector<std::string> choices;  ///< for enumeration
  double min = 0;          ///< inclusive lower bound for size/duration/integer/number
  bool min_exclusive = false;  ///< true: value must be > min (sizes "must be positive")
  std::optional<double> max;   ///< inclusive upper bound, when there is one
  std::string help;
  /// A rule beyond type and bounds (a config string that must parse): given the normalised
  /// value, returns what is wrong with it, or "" when it is fine. Empty function = no rule.
  std::function<std::string(const nlohmann::json&)> check;
};

struct kind_spec {
  std::string kind;
  std::string help;
  std::vector<param_spec> params;
  /// A rule across params, run on every expanded case (defaults, matrix and overrides applied):
  /// throws input_error(source, "params.NAME", ...) for a combination that cannot run.
  std::function<void(const nlohmann::json& params, const std::string& source)> check_case = {};

  [[nodiscard]] const param_spec* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
};

/// Every kind pinbench knows, in a fixed order (transfer, loader, allocator, ...).
[[nodiscard]] const std::vector<kind_spec>& kinds();
[[nodiscard]] const kind_spec* find_kind(std::string_view kind);

/// The keys of a scenario's "sampling" object (and of `--set sampling.KEY`), same shape as params.
[[nodiscard]] const std::vector<param_spec>& sampling_params();

}  // namespace pinbench::scenario
