// Checking and normalising one value against a kinds::param_spec, and showing values in messages.
// Internal to lib/scenario/: the file parser and `--set` share these rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kinds/registry.hpp"
#include "scenario/sampling_schema.hpp"

namespace pinbench::scenario::detail {

/// The outcome of checking one value: its normalised form, or what is wrong with it
/// (`expected a positive size such as "64MiB", got "0"`).
struct checked {
  nlohmann::json value;
  std::string problem;  ///< empty when the value is valid
  [[nodiscard]] bool ok() const { return problem.empty(); }
};

/// Validates `value` against `spec` and normalises it (sizes to bytes, durations to ns).
[[nodiscard]] checked check_value(const kinds::param_spec& spec, const nlohmann::json& value);

/// Reads a scenario's "params" object: each value checked and normalised; a spec named
/// "dataset.samples" is written {"dataset": {"samples": ...}}. Defaults are not filled in here.
/// Throws input_error(source, "params.NAME", ...) on the first problem.
[[nodiscard]] nlohmann::json read_params(const kinds::kind_spec& kind,
                                         const nlohmann::ordered_json& params,
                                         const std::string& source);

/// A value for a one-line message: compact JSON (strings quoted), cut to about 40 characters.
[[nodiscard]] std::string shown(const nlohmann::json& value);

/// Text safe for a one-line message: control characters escaped as in JSON.
[[nodiscard]] std::string escaped_line(std::string_view text);

/// 2'000'000 -> "2ms", 1'500'000 -> "1.5ms", 500'000 -> "500us", 0 -> "0".
[[nodiscard]] std::string format_duration_compact(std::int64_t ns);

/// Dotted param names ("dataset.samples") address nested objects ({"dataset": {"samples": ..}}).
[[nodiscard]] const nlohmann::json* find_dotted(const nlohmann::json& params,
                                                std::string_view name);
void set_dotted(nlohmann::json& params, std::string_view name, nlohmann::json value);

}  // namespace pinbench::scenario::detail
