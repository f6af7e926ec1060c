// Long-format CSV: one row per case and metric, for spreadsheets and data frames.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "report/layout.hpp"
#include "report/report.hpp"

namespace pinbench::report {

namespace {

// RFC 4180: quote a field holding a comma, quote or line break, doubling inner quotes.
std::string field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

void append_row(std::string& out, const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += ',';
    out += field(cells[i]);
  }
  out += '\n';
}

}  // namespace

std::string to_csv(const result::run_result& r) {
  std::vector<std::vector<std::map<std::string, std::string>>> params;  // [scenario][case]
  std::set<std::string> param_names;
  for (const auto& s : r.scenarios) {
    auto& per_case = params.emplace_back();
    for (const auto& c : s.cases) {
      // Nested params ("dataset": {"samples": ...}) become dotted columns, as --set names them.
      auto& flat = per_case.emplace_back(result::flat_params(c.params));
      for (const auto& kv : flat) param_names.insert(kv.first);
    }
  }

  std::vector<std::string> header{"scenario", "kind", "case", "status", "backend"};
  header.insert(header.end(), param_names.begin(), param_names.end());
  for (const char* name :
       {"metric", "unit", "better", "n", "median", "mean", "min", "max", "q1", "q3", "stdev"})
    header.emplace_back(name);

  std::string out;
  append_row(out, header);
  const auto backend = r.backend_name();
  for (std::size_t si = 0; si < r.scenarios.size(); ++si) {
    const auto& s = r.scenarios[si];
    for (std::size_t ci = 0; ci < s.cases.size(); ++ci) {
      const auto& c = s.cases[ci];
      std::vector<std::string> lead{s.name, s.kind, c.id, std::string(result::to_string(c.status)),
                                    backend};
      for (const auto& name : param_names) {
        const auto it = params[si][ci].find(name);
        lead.push_back(it == params[si][ci].end() ? std::string() : it->second);
      }
      if (c.metrics.empty()) {
        auto row = lead;
        row.resize(row.size() + 11);  // a failed case still shows up, with empty metric fields
        append_row(out, row);
        continue;
      }
      for (const auto& m : c.metrics) {
        const auto sum = result::finite_summary(m);
        auto row = lead;
        for (const auto& v :
             {m.name, m.unit, std::string(result::to_string(m.better)), std::to_string(sum.n)})
          row.push_back(v);
        for (double v : {sum.median, sum.mean, sum.min, sum.max, sum.q1, sum.q3, sum.stdev})
          row.push_back(sum.n == 0 ? std::string() : exact_number(v));
        append_row(out, row);
      }
    }
  }
  return out;
}

}  // namespace pinbench::report
