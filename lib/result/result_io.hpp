// The result file, `pinbench.result/1`: written as JSON, read back (by `report`, `compare` and
// the round processes of `run --repeat`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "result/result.hpp"

namespace pinbench::result {

/// The `pinbench.result/1` document (schema, tool, created, environment, scenarios with
/// cases, each metric with unit, better, summary and raw samples).
/// Ordered so that keys stay in the order written (metrics in the order the engine recorded
/// them); it converts implicitly to nlohmann::json, which sorts keys instead.
/// Non-finite numbers are written as null, never as NaN or inf.
[[nodiscard]] nlohmann::ordered_json to_json(const run_result& r);

/// Reads a result document back; unknown fields are ignored. Throws input_error naming the
/// file and the JSON path for a document that is not pinbench.result/1. A null where a number
/// belongs reads as NaN. Summaries are not read: they are recomputed from the samples.
[[nodiscard]] run_result from_json(const nlohmann::json& j, const std::string& source);

/// Same, for a document parsed with nlohmann::ordered_json::parse: keeps the file's metric
/// order (a nlohmann::json document has its metrics in alphabetical order).
[[nodiscard]] run_result from_json(const nlohmann::ordered_json& j, const std::string& source);

/// Reads a pinbench.result/1 file (the order of its metrics kept). Throws input_error naming
/// the file, and the line and column of a JSON syntax error or the JSON path of a problem.
[[nodiscard]] run_result read_result_file(const std::string& path);

}  // namespace pinbench::result
