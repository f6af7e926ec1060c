// The comparison as JSON (`pinbench.compare/1`): every number a script may want to gate on.
#include <cmath>
#include <optional>

#include "gate/output.hpp"

namespace pinbench::gate {

namespace {

using ojson = nlohmann::ordered_json;

ojson number(double v) {
  return std::isfinite(v) ? ojson(v) : ojson(nullptr);
}

ojson number(std::optional<double> v) {
  return v ? number(*v) : ojson(nullptr);
}

ojson text_or_null(const std::string& s) {
  return s.empty() ? ojson(nullptr) : ojson(s);
}

ojson endpoint_json(const endpoint& e) {
  return ojson{{"file", e.label},
               {"backend", text_or_null(e.backend)},
               {"device", text_or_null(e.device)},
               {"device_uuid", text_or_null(e.device_uuid)},
               {"created", text_or_null(e.created)},
               {"tool_version", text_or_null(e.tool_version)}};
}

ojson row_json(const row& r) {
  ojson out = ojson::object();
  out["scenario"] = r.scenario;
  out["case"] = r.case_id;
  out["metric"] = text_or_null(r.metric);
  out["unit"] = r.unit;
  out["better"] = result::to_string(r.better);
  out["gated"] = r.gated;
  out["base"] = {{"n", r.base.n},
                 {"median", r.base.n > 0 ? number(r.base.median) : nullptr},
                 {"rounds", r.base.rounds}};
  out["current"] = {{"n", r.current.n},
                    {"median", r.current.n > 0 ? number(r.current.median) : nullptr},
                    {"rounds", r.current.rounds}};
  out["deterministic"] = r.deterministic;
  out["ratio"] = number(r.ratio);
  out["interval"] =
      r.ci_lo && r.ci_hi ? ojson::array({number(r.ci_lo), number(r.ci_hi)}) : ojson(nullptr);
  out["p_value"] = number(r.p_value);
  out["test"] = text_or_null(r.test);
  if (r.metric.empty()) {
    out["threshold"] = nullptr;
    out["threshold_requested"] = nullptr;
    out["threshold_source"] = nullptr;
    out["noise"] = nullptr;
    out["noise_source"] = nullptr;
    out["noise_bound"] = nullptr;
    out["noise_freedom"] = nullptr;
  } else {
    out["threshold"] = number(r.threshold);
    out["threshold_requested"] = number(r.requested);
    out["threshold_source"] = std::string(to_string(r.source));
    out["noise"] = number(r.noise);
    out["noise_source"] =
        r.deterministic ? ojson(nullptr) : ojson(r.round_noise ? "rounds" : "samples");
    out["noise_bound"] = number(r.noise_bound);
    out["noise_freedom"] = r.round_noise ? ojson(r.noise_freedom) : ojson(nullptr);
  }
  out["verdict"] = std::string(to_string(r.result));
  out["reason"] = r.reason;
  return out;
}

ojson unpaired_json(const std::vector<unpaired>& items) {
  ojson out = ojson::array();
  for (const auto& u : items)
    out.push_back({{"scenario", u.scenario},
                   {"case", u.case_id},
                   {"metric", text_or_null(u.metric)},
                   {"gated", u.gated}});
  return out;
}

}  // namespace

nlohmann::ordered_json to_json(const comparison& c) {
  ojson out = ojson::object();
  out["schema"] = "pinbench.compare/1";
  out["base"] = endpoint_json(c.base);
  out["current"] = endpoint_json(c.current);
  const auto& o = c.settings;
  out["settings"] = {{"threshold", number(o.threshold)},
                     {"confidence", number(o.confidence)},
                     {"resamples", o.resamples},
                     {"seed", o.seed},
                     {"noise_multiple", number(o.noise_multiple)},
                     {"min_samples", o.min_samples},
                     {"fail_on", std::string(to_string(o.fail))},
                     {"allow_env_mismatch", o.allow_env_mismatch},
                     {"metrics", o.metrics}};
  out["environment_mismatch"] = text_or_null(c.env_mismatch);
  out["warnings"] = c.warnings;
  if (!c.tune_notes.empty()) out["tune"] = c.tune_notes;
  if (!c.replay_notes.empty()) out["against_pytorch"] = c.replay_notes;
  ojson rows = ojson::array();
  for (const auto& r : c.rows) rows.push_back(row_json(r));
  out["rows"] = std::move(rows);
  out["only_in_base"] = unpaired_json(c.only_in_base);
  out["only_in_current"] = unpaired_json(c.only_in_current);
  ojson counts = ojson::object();
  for (auto v : {verdict::regression, verdict::failed, verdict::inconclusive, verdict::improvement,
                 verdict::unchanged})
    counts[std::string(to_string(v))] = c.count(v);
  counts["info"] = c.count(verdict::info, false);
  out["counts"] = std::move(counts);
  out["exit_code"] = c.exit_code();
  out["outcome"] = c.outcome_line();
  return out;
}

}  // namespace pinbench::gate
