// The launcher's environment as pinbench reads it: through a getenv that tests can replace, an
// empty value counting as unset (scripts `export RANK=` to clear a variable), integers parsed
// whole ("3.0" is not a rank).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pinbench::dist {

/// A getenv: the value of a variable, or nullptr when it is unset. Empty: the process's own.
using getenv_fn = std::function<const char*(const char*)>;

class environment {
 public:
  explicit environment(getenv_fn getenv = {}) : getenv_(std::move(getenv)) {}

  [[nodiscard]] std::optional<std::string> get(const char* name) const;
  [[nodiscard]] bool has(const char* name) const { return get(name).has_value(); }
  /// The first of two names that is set (a current and an older spelling), else nullopt.
  [[nodiscard]] std::optional<std::string> get_either(const char* name, const char* older) const;

  /// The variable as an integer; nullopt when unset; input_error (exit 2) naming the variable
  /// when it is not one.
  [[nodiscard]] std::optional<int> integer(const char* name) const;

  [[nodiscard]] static std::optional<int> parse(std::string_view text);
  [[nodiscard]] static std::optional<std::uint64_t> parse_unsigned(std::string_view text);

 private:
  getenv_fn getenv_;
};

}  // namespace pinbench::dist
