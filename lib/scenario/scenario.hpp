// Scenario files (`pinbench.scenario/1`): parse, validate, expand the matrix into cases.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/case.hpp"

namespace pinbench::scenario {

// A scenario expands into measure::case_spec, each with its measure::sampling rule.
using measure::case_spec;
using measure::sampling;

/// One matrix axis: a param name and its values, both as written (for ids) and normalised.
struct matrix_axis {
  std::string param;
  std::vector<nlohmann::json> raw;         ///< as written in the file ("1MiB")
  std::vector<nlohmann::json> normalised;  ///< as the engines read them (1048576)
};

/// A validated scenario. Every value in `params` is normalised (sizes in bytes, durations in ns)
/// and every param of the kind is present (defaults filled in).
struct scenario {
  std::string name;
  std::string description;
  std::string kind;
  std::string source;             ///< the file it came from, "scenarios/x.json" for built-ins
  bool builtin = false;           ///< compiled in: `source` names no file on this machine
  std::vector<std::string> tags;  ///< "quick" puts a built-in into the default suite
  nlohmann::json params = nlohmann::json::object();
  std::vector<matrix_axis> matrix;
  measure::sampling sampling;
  nlohmann::json gate = nlohmann::json::object();
};

/// `--set key=value`: `key` is a param name (dotted for nested ones) or `sampling.NAME`.
struct override_spec {
  std::string key;
  std::string value;  ///< as typed; parsed against the param's type (JSON first, then as text)
};

/// Parses scenario text. `source` names the file in error messages.
/// Throws input_error("SOURCE: JSON_PATH: expected ...") on the first problem found; a syntax
/// error names line and column.
[[nodiscard]] scenario parse_scenario(std::string_view text, const std::string& source);

/// A scenario written in code (tune's trials) as a document already parsed: checked exactly as
/// a file's would be, without the text round trip.
[[nodiscard]] scenario parse_scenario_document(const nlohmann::ordered_json& doc,
                                               const std::string& source);

/// Reads and parses one file. Throws input_error for a missing or unreadable file.
[[nodiscard]] scenario load_scenario_file(const std::filesystem::path& path);

/// Resolves run/validate arguments: a file, a directory (every *.json in it, sorted; error when
/// none), or `builtin:NAME`. No argument at all gives the built-in quick suite.
/// Validates everything before returning: nothing runs until every input is valid.
[[nodiscard]] std::vector<scenario> load_inputs(const std::vector<std::string>& args);

/// Parses "k=v" strings. Throws input_error for a missing '='.
[[nodiscard]] std::vector<override_spec> parse_overrides(const std::vector<std::string>& args);

/// Checks overrides against a scenario's kind; throws input_error for an unknown key (with the
/// closest valid name) or a bad value. Called for every scenario before any runs.
void check_overrides(const scenario& s, const std::vector<override_spec>& overrides);

/// The most cases one scenario may expand to unless the caller raises it (`--max-cases N`).
inline constexpr std::uint64_t default_max_cases = 100'000;

/// The most cases expand() builds for one scenario, whatever `max_cases` says. A built case holds
/// its params and their parsed form: 10^6 cases took 1.2 GB (transfer) and 4.2 GB (loader), so
/// a matrix beyond this would exhaust the host's memory before its first case ran; `validate`
/// counts such a matrix without building it.
inline constexpr std::uint64_t max_built_cases = 1'000'000;

/// How many cases expand() would make (overridden axes dropped), without making them.
/// Saturates at UINT64_MAX; the error thrown by expand() states the exact count.
[[nodiscard]] std::uint64_t count_cases(const scenario& s,
                                        const std::vector<override_spec>& overrides = {});

/// count_cases() checked as expand() checks it: throws the same input_error when the count
/// exceeds `max_cases` (and the overrides as check_overrides does). Builds no case.
[[nodiscard]] std::uint64_t checked_case_count(const scenario& s,
                                               const std::vector<override_spec>& overrides,
                                               std::uint64_t max_cases);

/// Expands the matrix (cartesian product, axes in file order, last axis fastest) with overrides
/// applied: an override replaces that param for every case, and drops a matrix axis on the same
/// key. Throws input_error (JSON path "matrix") naming the exact case count when it exceeds
/// `max_cases` or max_built_cases, before anything is allocated.
[[nodiscard]] std::vector<case_spec> expand(const scenario& s,
                                            const std::vector<override_spec>& overrides = {},
                                            std::uint64_t max_cases = default_max_cases);

/// The cases of expand(), in the same order, handed to `visit` one at a time: only one is held at
/// once, so memory does not grow with the count (validate checks every case this way). Checks
/// the count against `max_cases` first, as expand() does, but not against max_built_cases.
void for_each_case(const scenario& s, const std::vector<override_spec>& overrides,
                   std::uint64_t max_cases, const std::function<void(const case_spec&)>& visit);

/// How many times expand() or for_each_case() expanded a scenario in this process: a run
/// expands each of its scenarios once (run::make_plan), which a test checks with this.
[[nodiscard]] std::uint64_t expansions() noexcept;

/// The kind's defaults, shown as display_params shows them: name (dotted) -> text; "required"
/// for a param without a default, "unset" for an optional one. For `pinbench list --params`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> shown_defaults(
    const std::string& kind);

/// A case's params with sizes and durations shown as people write them, for reports.
[[nodiscard]] nlohmann::json display_params(const std::string& kind, const nlohmann::json& params);

}  // namespace pinbench::scenario
