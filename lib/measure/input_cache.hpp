// What parsing a run's cases reads from outside (a user's image folder), read once per run: a
// matrix of 12 loader cases over one `dataset.dir` lists the folder once, not 12 times.
// run::make_plan holds one cache while it expands the scenarios; a kind's parse_case asks it
// through cached_input(). Outside a plan (a test parsing one case) every call reads anew.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace pinbench::measure {

class input_cache {
 public:
  input_cache();
  ~input_cache();
  input_cache(const input_cache&) = delete;
  input_cache& operator=(const input_cache&) = delete;

  /// The value kept under `key`, made by `make` the first time. A `make` that throws keeps
  /// nothing (the next case reports the same error).
  std::shared_ptr<const void> get(const std::string& key,
                                  const std::function<std::shared_ptr<const void>()>& make);

 private:
  std::map<std::string, std::shared_ptr<const void>> values_;
  input_cache* outer_;  ///< the cache this one hides on this thread, restored when it goes
};

/// `make()`'s value through the input cache of the plan being built on this thread, under `key`
/// (which must name everything the value depends on); straight from `make()` when none is.
template <class T>
[[nodiscard]] std::shared_ptr<const T> cached_input(const std::string& key,
                                                    const std::function<T()>& make);

namespace detail {
[[nodiscard]] input_cache* current_input_cache() noexcept;
}

template <class T>
std::shared_ptr<const T> cached_input(const std::string& key, const std::function<T()>& make) {
  input_cache* cache = detail::current_input_cache();
  if (cache == nullptr) return std::make_shared<const T>(make());
  return std::static_pointer_cast<const T>(cache->get(
      key, [&] { return std::shared_ptr<const void>(std::make_shared<const T>(make())); }));
}

}  // namespace pinbench::measure
