// `pinbench list`: the built-in scenarios, and with --params what each kind accepts.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "core/error.hpp"
#include "kinds/registry.hpp"
#include "scenario/builtin.hpp"
#include "scenario/sampling_schema.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::app {

namespace {

struct list_args {
  bool params = false;
  std::string format = "table";
};

std::string type_name(const kinds::param_spec& p) {
  using kinds::param_type;
  switch (p.type) {
    case kinds::param_type::size:
      return "size";
    case kinds::param_type::duration:
      return "duration";
    case kinds::param_type::integer:
      return "integer";
    case kinds::param_type::number:
      return "number";
    case kinds::param_type::boolean:
      return "boolean";
    case kinds::param_type::string:
      return "string";
    case kinds::param_type::integer_list:
      return "integer list";
    case kinds::param_type::enumeration: {
      std::string s;
      for (const auto& c : p.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
  }
  return "?";
}

int list_params(const list_args& a) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto* kind : kinds::all()) {
    const auto& k = *kind;
    const auto defaults = scenario::shown_defaults(k.kind);
    nlohmann::json kj{{"kind", k.kind}, {"help", k.help}, {"params", nlohmann::json::array()}};
    if (a.format != "json") std::printf("kind %s: %s\n", k.kind.c_str(), k.help.c_str());
    for (std::size_t i = 0; i < k.params.size(); ++i) {
      const auto& p = k.params[i];
      const std::string& def = defaults.at(i).second;
      if (a.format == "json") {
        kj["params"].push_back(
            {{"name", p.name}, {"type", type_name(p)}, {"default", def}, {"help", p.help}});
      } else {
        std::printf("  %-20s %-40s default %s\n      %s\n", p.name.c_str(), type_name(p).c_str(),
                    def.c_str(), p.help.c_str());
      }
    }
    out.push_back(std::move(kj));
  }
  // The sampling keys are the same for every kind.
  nlohmann::json sj{{"kind", "sampling (every kind)"}, {"params", nlohmann::json::array()}};
  if (a.format != "json") std::printf("sampling (every kind; --set sampling.KEY=VALUE)\n");
  for (const auto& p : scenario::sampling_params()) {
    if (a.format == "json")
      sj["params"].push_back({{"name", p.name}, {"type", type_name(p)}, {"help", p.help}});
    else
      std::printf("  %-20s %-40s\n      %s\n", p.name.c_str(), type_name(p).c_str(),
                  p.help.c_str());
  }
  out.push_back(std::move(sj));
  if (a.format == "json") std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int list(const list_args& a) {
  if (a.params) return list_params(a);
  nlohmann::json out = nlohmann::json::array();
  if (a.format != "json")
    std::printf("%-34s %-10s %-7s %5s  %s\n", "NAME", "KIND", "SUITE", "CASES", "DESCRIPTION");
  for (const auto& f : scenario::builtin_files()) {
    const auto s = scenario::parse_scenario(f.text, std::string(f.source));
    const auto cases = scenario::count_cases(s);
    const bool quick = std::find(s.tags.begin(), s.tags.end(), "quick") != s.tags.end();
    if (a.format == "json") {
      out.push_back({{"name", "builtin:" + s.name},
                     {"kind", s.kind},
                     {"tags", s.tags},
                     {"cases", cases},
                     {"description", s.description},
                     {"source", s.source}});
    } else {
      std::printf("%-34s %-10s %-7s %5zu  %s\n", ("builtin:" + s.name).c_str(), s.kind.c_str(),
                  quick ? "quick" : "", static_cast<std::size_t>(cases), s.description.c_str());
    }
  }
  if (a.format == "json")
    std::printf("%s\n", out.dump(2).c_str());
  else
    std::printf("\n`pinbench run` runs the quick suite; `pinbench run builtin:NAME` runs one.\n");
  return 0;
}

}  // namespace

runner add_list(CLI::App& app) {
  auto a = std::make_shared<list_args>();
  auto* sub = app.add_subcommand(
      "list", "List the built-in scenarios (or, with --params, every kind's params)");
  sub->add_flag("--params", a->params, "Show each scenario kind's params, types and defaults");
  sub->add_option("--format", a->format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return [a] { return list(*a); };
}

}  // namespace pinbench::app
