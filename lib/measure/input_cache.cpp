#include "measure/input_cache.hpp"

namespace pinbench::measure {

namespace {
// The innermost cache alive on this thread: each rank of an in-process test world builds its
// own plan on its own thread.
thread_local input_cache* current = nullptr;
}  // namespace

input_cache::input_cache() : outer_(current) {
  current = this;
}

input_cache::~input_cache() {
  current = outer_;
}

std::shared_ptr<const void> input_cache::get(
    const std::string& key, const std::function<std::shared_ptr<const void>()>& make) {
  if (const auto it = values_.find(key); it != values_.end()) return it->second;
  auto value = make();
  values_.emplace(key, value);
  return value;
}

namespace detail {
input_cache* current_input_cache() noexcept {
  return current;
}
}  // namespace detail

}  // namespace pinbench::measure
