// The builders of param_spec: one line per param in a kind's description.
#include "kinds/params.hpp"

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

}  // namespace pinbench::kinds
