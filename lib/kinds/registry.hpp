// The kind registry: every scenario kind described once, in its own folder (kinds/<kind>/), and
// found here by name. `run`, `validate`, `list`, `report` and `compare` take everything they
// know about a kind from its description: no code outside kinds/ names a kind.
// docs/architecture.md walks through adding one.
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

  [[nodiscard]] const param_spec* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
};

/// Every kind, the built-in ones first in a fixed order (transfer, loader, allocator,
/// collective, data_parallel), then those added.
[[nodiscard]] std::vector<const kind_spec*> all();

/// The kind of that name, or nullptr.
[[nodiscard]] const kind_spec* find(std::string_view kind);

/// Registers a kind beyond the built-in ones (a test's toy kind). Throws std::invalid_argument
/// when the name is taken. Register before running anything: the registry is not locked.
void add(kind_spec kind);

/// A kind registered for this object's life (a test's toy kind): removed again when it goes,
/// so that other code in the same process sees the built-in kinds only. Nest them, never
/// interleave: the registry is a stack beyond the built-in kinds.
class scoped_kind {
 public:
  explicit scoped_kind(kind_spec kind);
  ~scoped_kind();
  scoped_kind(const scoped_kind&) = delete;
  scoped_kind& operator=(const scoped_kind&) = delete;
};

}  // namespace pinbench::kinds
