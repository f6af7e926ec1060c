// `pinbench tune`'s question, trials and answer, as the result's `tune` block: what the HTML
// report draws (a chart of the trials, the chosen one marked) and what scripts read
// (`jq -r .tune.answer`). Every trial names the case of the result that holds its samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench::result {

/// The question a tune answers: `pinbench tune allocator` or `pinbench tune loader`.
enum class tune_question { allocator, loader };
/// A trial's part of the search: a short screening trial, or the full-length run that
/// confirms a setting.
enum class trial_phase { search, confirm };
/// Why a search ended before it had tried what it meant to: none (it finished), its --budget
/// was spent, or a stop signal (Ctrl-C, SIGTERM, SIGHUP).
enum class search_stop { none, budget, interrupted };

/// Their names in the result and on the command line ("allocator", "confirm", "budget").
[[nodiscard]] std::string_view to_string(tune_question q) noexcept;
[[nodiscard]] std::string_view to_string(trial_phase p) noexcept;
[[nodiscard]] std::string_view to_string(search_stop s) noexcept;

struct tune_trial {
  std::string label;     ///< the setting tried: "expandable_segments:True", "num_workers=3 ..."
  std::string scenario;  ///< the scenario and case of the result that hold its samples
  std::string case_id;
  trial_phase phase = trial_phase::search;
  /// The figure the chart draws (tune_block::chart_metric); nullopt when the trial has none
  /// (it failed).
  std::optional<double> value;
  bool meets_goal = false;  ///< no OOM; the target busy fraction held
  std::string note;         ///< "OOM at event 1841", "data wait 31%", why it failed
  /// The ranked table's row as shown: column name -> text (with units), in column order.
  std::vector<std::pair<std::string, std::string>> cells;
};

struct tune_block {
  tune_question question = tune_question::allocator;
  nlohmann::json inputs = nlohmann::json::object();  ///< what was asked, as given and resolved
  std::vector<tune_trial> trials;                    ///< in the order shown (ranked)
  std::optional<std::size_t> chosen;                 ///< index into trials: the recommendation
  std::optional<std::size_t> baseline;  ///< index into trials: the setting in use today
  bool goal_met = false;  ///< the chosen setting meets the goal (no OOM; the target busy)
  /// What to paste: "export PYTORCH_CUDA_ALLOC_CONF=..." or "DataLoader(...)" lines.
  std::string answer;
  /// One or two sentences: why this answer, or what stops any setting from meeting the goal.
  std::string verdict;
  /// A replay of a recording checked against what the recording shows (tune allocator on a
  /// PyTorch snapshot: "your settings, replayed: PyTorch's 461 cudaMalloc/cudaFree decisions
  /// reproduced exactly"); "" when there is nothing to check against.
  std::string self_check;
  std::string chart_metric, chart_unit;  ///< what `value` is ("reserved_bytes.all.peak", bytes)
  std::optional<double> chart_target;    ///< a line on the chart (the target busy fraction)
  double elapsed_s = 0;                  ///< the whole search, confirming runs included
  search_stop stopped_by = search_stop::none;  ///< the search was cut short, and why
};

/// In a fixed key order (the file reads question, answer, verdict, then the trials).
[[nodiscard]] nlohmann::ordered_json to_json(const tune_block& t);
/// Throws input_error naming `source` and the JSON path for a block that is not one.
/// Read from an ordered document, so that the cells keep their column order.
[[nodiscard]] tune_block tune_from_json(const nlohmann::ordered_json& j, const std::string& source);

}  // namespace pinbench::result
