// Walking a JSON document by keys, for readers that tolerate what is missing (reports of older
// results, optional facts of a case).
#pragma once

#include <initializer_list>

#include <nlohmann/json.hpp>

namespace pinbench {

/// The value at `keys` (object members, outermost first), or nullptr where a key is missing or
/// a value on the way is not an object.
template <class Json>
[[nodiscard]] const Json* find_path(const Json& j, std::initializer_list<const char*> keys) {
  const Json* p = &j;
  for (const char* k : keys) {
    if (!p->is_object()) return nullptr;
    const auto it = p->find(k);
    if (it == p->end()) return nullptr;
    p = &*it;
  }
  return p;
}

}  // namespace pinbench
