// The builders of param_spec: one line per param in a kind's description.
#include "kinds/params.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

namespace pinbench::kinds {

using nlohmann::json;

param_spec enumeration(std::string name, std::vector<std::string> choices, std::string def,
                       std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::enumeration;
  p.default_value = std::move(def);
  p.choices = std::move(choices);
  p.help = std::move(help);
  return p;
}

param_spec bounded(std::string name, param_type type, json def, double min, bool min_exclusive,
                   std::optional<double> max, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(def);
  p.min = min;
  p.min_exclusive = min_exclusive;
  p.max = max;
  p.help = std::move(help);
  return p;
}

param_spec boolean(std::string name, bool def, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::boolean;
  p.default_value = def;
  p.help = std::move(help);
  return p;
}

param_spec text(std::string name, std::string def, std::string help) {
  param_spec p;
  p.name = std::move(name);
  p.type = param_type::string;
  p.default_value = std::move(def);
  p.help = std::move(help);
  return p;
}

void set_param(json& params, std::string_view dotted, json value) {
  json* at = &params;
  for (std::size_t dot = dotted.find('.'); dot != std::string_view::npos; dot = dotted.find('.')) {
    at = &(*at)[std::string(dotted.substr(0, dot))];
    dotted.remove_prefix(dot + 1);
  }
  (*at)[std::string(dotted)] = std::move(value);
}

namespace detail {

const json* find_param(const json& params, std::string_view dotted) {
  const json* at = &params;
  for (;;) {
    const auto dot = dotted.find('.');
    const std::string key(dotted.substr(0, dot));
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string_view::npos) return at;
    dotted.remove_prefix(dot + 1);
  }
}

void throw_unknown_choice(std::string_view param, const std::vector<std::string>& names,
                          const json* got, const std::string& source) {
  throw input_error(source, "params." + std::string(param),
                    "expected one of " + quoted_list(names) + ", got " +
                        (got == nullptr ? std::string("nothing") : got->dump()));
}

}  // namespace detail

}  // namespace pinbench::kinds
