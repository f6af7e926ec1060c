// A kind's description: its params looked up by name.
#include "kinds/kind_spec.hpp"

#include <algorithm>

namespace pinbench::kinds {

const param_spec* kind_spec::find(std::string_view name) const {
  const auto it = std::find_if(params.begin(), params.end(),
                               [&](const param_spec& p) { return p.name == name; });
  return it == params.end() ? nullptr : &*it;
}

std::vector<std::string> kind_spec::names() const {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.name);
  return out;
}

}  // namespace pinbench::kinds
