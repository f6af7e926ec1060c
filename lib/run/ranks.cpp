// A launched run: the same inputs on every rank, and every rank's cases in one result.
#include "run/ranks.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "result/result_io.hpp"

namespace pinbench::run {

void check_same_inputs(dist::communicator& world, const std::string& fingerprint,
                       dist::timeout limit) {
  const auto all = world.all_gather(fingerprint, limit);
  std::vector<std::string> differing;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differing.push_back(std::to_string(r));
  if (differing.empty()) return;
  throw input_error({}, "launch",
                    fmt::format("rank(s) {} were given other scenarios, overrides, backend, seed "
                                "or repeat than rank 0: every rank must run the same cases "
                                "(nothing was run)",
                                fmt::join(differing, ", ")));
}

nlohmann::json rank_entry(const dist::launch_info& launch, std::string_view transport,
                          const nlohmann::json& environment) {
  nlohmann::json e;
  e["rank"] = launch.rank;
  e["local_rank"] = launch.local_rank;
  e["host"] = read_host_info().hostname;
  e["launcher"] = std::string(to_string(launch.launcher));
  e["transport"] = std::string(transport);
  e["backend"] = environment.value("backend", "");
  e["device"] = environment.value("device", nlohmann::json::object());
  return e;
}

result::run_result merge_ranks(const std::vector<result::run_result>& per_rank,
                               const std::vector<nlohmann::json>& entries) {
  if (per_rank.empty()) throw error("merge_ranks: no rank's result");
  result::run_result out = per_rank.front();
  out.ranks = nlohmann::json::array();
  for (const auto& e : entries) out.ranks.push_back(e);
  for (auto& s : out.scenarios) s.cases.clear();
  for (std::size_t k = 0; k < per_rank.size(); ++k) {
    const auto& run = per_rank[k];
    // The rank its entry names (a result written after a loss holds one rank, maybe not 0).
    const int r =
        k < entries.size() && entries[k].contains("rank") && entries[k]["rank"].is_number_integer()
            ? entries[k]["rank"].get<int>()
            : static_cast<int>(k);
    out.interrupted = out.interrupted || run.interrupted;
    if (out.interrupted_by.empty()) out.interrupted_by = run.interrupted_by;
    if (out.lost_rank.is_null()) out.lost_rank = run.lost_rank;
    for (const auto& s : run.scenarios) {
      auto* into = static_cast<result::scenario_result*>(nullptr);
      for (auto& o : out.scenarios)
        if (o.name == s.name) into = &o;
      if (into == nullptr) {  // a scenario rank 0 did not reach (interrupted before it)
        out.scenarios.push_back(s);
        into = &out.scenarios.back();
        into->cases.clear();
      }
      for (auto c : s.cases) {
        c.rank = r;
        c.id = fmt::format("rank={}{}{}", r, c.id == "default" ? "" : ",",
                           c.id == "default" ? "" : c.id);
        into->cases.push_back(std::move(c));
      }
    }
  }
  return out;
}

bool writes_after_loss(int rank, const nlohmann::json& lost_rank) {
  if (lost_rank.value("stopped_by_lead", false)) return false;
  const auto r = lost_rank.find("rank");
  const bool lead_lost = r != lost_rank.end() && r->is_number_integer() && r->get<int>() == 0;
  return rank == (lead_lost ? 1 : 0);
}

result::run_result gather_ranks(dist::communicator& world, const result::run_result& mine,
                                const nlohmann::json& my_entry, dist::timeout limit) {
  const nlohmann::json doc{{"result", result::to_json(mine)}, {"rank", my_entry}};
  const auto all = world.all_gather(doc.dump(), limit);
  std::vector<result::run_result> runs;
  std::vector<nlohmann::json> entries;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto j = nlohmann::json::parse(all[r]);
    runs.push_back(result::from_json(j.at("result"), fmt::format("rank {}'s result", r)));
    entries.push_back(j.at("rank"));
  }
  return merge_ranks(runs, entries);
}

}  // namespace pinbench::run
