// How comparisons read as text (percentages, p-values, values in their units), shared by the
// verdict reasons and every writer of gate/. Internal to gate/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gate/compare.hpp"

namespace pinbench::gate::detail {

/// A relative change as a signed percentage: 0.201 -> "+20.1%", -0.05 -> "-5.0%".
[[nodiscard]] std::string signed_percent(double change);

/// A fraction as an unsigned percentage: 0.05 -> "5.0%".
[[nodiscard]] std::string percent(double fraction);

/// The change of a ratio of medians (ratio - 1) as a signed percentage; "-" when not finite.
[[nodiscard]] std::string change_text(double ratio);

/// "[-21.0%, -19.2%]" from ratio bounds; "-" when there is no interval.
[[nodiscard]] std::string interval_text(std::optional<double> lo, std::optional<double> hi);

/// "0.032", "<0.001", "1.00"; "-" when the test was not run.
[[nodiscard]] std::string p_text(std::optional<double> p);

/// The cells every tabular writer shows for a row, in this order: case, metric, base,
/// current, change, interval, p, threshold, verdict. A case-level row shows "(case)" and "-".
[[nodiscard]] std::vector<std::string> row_cells(const row& r);

/// The headers matching row_cells, with the confidence level in the interval's header.
[[nodiscard]] std::vector<std::string> row_headers(const options& o);

/// "file · backend · device · created" for one side.
[[nodiscard]] std::string endpoint_text(const endpoint& e);

/// The rule applied, in one line: the threshold, what raises it, when the gate fails.
[[nodiscard]] std::string rule_text(const options& o);

/// The statistics, in one line: the interval and the test.
[[nodiscard]] std::string method_text(const options& o);

/// "scenario case metric" for a row or unpaired entry, without empty parts.
[[nodiscard]] std::string subject_text(const std::string& scenario, const std::string& case_id,
                                       const std::string& metric);

/// Whether a row's reason is shown under the table: gated rows that are not fine.
[[nodiscard]] bool needs_attention(const row& r);

}  // namespace pinbench::gate::detail
