// What a kind's params are: each one's name, type, bounds, default and help, and the builders
// a kind declares them with. The scenario loader, `--set`, `pinbench list --params` and the
// README's tables read them; nothing else describes a param.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench::kinds {

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
  nlohmann::json default_value;  ///< in the normalised form; null = required (unless optional)
  /// May be left out: no default is filled in, and the engine sees it absent (a PyTorch call
  /// that was never made differs from any value it could have been made with).
  bool optional = false;
  std::vector<std::string> choices;  ///< for enumeration
  double min = 0;                    ///< inclusive lower bound for size/duration/integer/number
  bool min_exclusive = false;        ///< true: value must be > min (sizes "must be positive")
  std::optional<double> max;         ///< inclusive upper bound, when there is one
  std::string help;
  /// A rule beyond type and bounds (a config string that must parse): given the normalised
  /// value, returns what is wrong with it, or "" when it is fine. Empty function = no rule.
  std::function<std::string(const nlohmann::json&)> check;
};

/// One of `choices`, `def` when absent.
[[nodiscard]] param_spec enumeration(std::string name, std::vector<std::string> choices,
                                     std::string def, std::string help);

/// A size, duration, integer or number within [min, max] (`min_exclusive`: > min).
[[nodiscard]] param_spec bounded(std::string name, param_type type, nlohmann::json def, double min,
                                 bool min_exclusive, std::optional<double> max, std::string help);

[[nodiscard]] param_spec boolean(std::string name, bool def, std::string help);

/// Free text.
[[nodiscard]] param_spec text(std::string name, std::string def, std::string help);

}  // namespace pinbench::kinds
