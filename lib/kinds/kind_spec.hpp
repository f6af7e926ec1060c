// What a scenario kind is: its params, the parser of a case's params, its engine, its table
// columns and its charts. A kind's folder (kinds/<kind>/) fills one in; the registry
// (kinds/registry.hpp) finds it by name.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chart/figure.hpp"
#include "kinds/params.hpp"
#include "measure/engine.hpp"
#include "result/result.hpp"

namespace pinbench::kinds {

/// A column of the kind's results table.
struct headline {
  std::string metric;
  bool always = false;  ///< shown even when no case has the metric (every cell then reads "-")
  /// The column's title where the metric's name and unit would not say it ("% of link").
  std::string label = {};
};

/// A scenario kind: what it accepts, what measures it, and how its results read.
struct kind_spec {
  std::string kind;  ///< the scenario's "kind"
  std::string help;  ///< one line for `pinbench list --params`
  std::vector<param_spec> params;
  /// Parses one expanded case's params (complete and normalised: defaults, matrix and overrides
  /// applied) into the kind's own struct, once, when the scenario is expanded; throws
  /// input_error(source, "params.NAME", ...) for a combination that cannot run.
  std::function<std::shared_ptr<const measure::case_params>(const nlohmann::json& params,
                                                            const std::string& source)>
      parse_case = {};
  /// A fresh engine for one scenario's cases (empty: the kind cannot run in this build).
  std::function<std::unique_ptr<measure::engine>()> make_engine = {};
  /// The table's columns, in order; a kind with none shows every metric it recorded.
  std::vector<headline> headlines = {};
  /// The report's charts for a scenario of this kind, their ids starting with `id_prefix`.
  std::function<std::vector<chart::figure>(const result::scenario_result&,
                                           const std::string& id_prefix)>
      figures = {};
  /// A case's snapshot (`run --snapshot`) in the form its tool's own viewer reads, to be
  /// written as a pickle (empty: the kind's snapshots are JSON only).
  std::function<nlohmann::json(const nlohmann::json& snapshot)> viewer_snapshot = {};

  [[nodiscard]] const param_spec* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
};

}  // namespace pinbench::kinds
