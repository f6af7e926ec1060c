// What a kind's params are: each one's name, type, bounds, default and help, and the builders
// a kind declares them with. The scenario loader, `--set`, `pinbench list --params` and the
// kind guides (docs/<kind>.md) read them; nothing else describes a param.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinbench::kinds {

enum class param_type {
  size,          ///< bytes: "64MiB" or an integer; normalised to an unsigned integer of bytes
  duration,      ///< "500us", "2s"; normalised to an integer of nanoseconds
  integer,       ///< JSON integer
  number,        ///< JSON number
  boolean,       ///< JSON true/false
  string,        ///< free text
  enumeration,   ///< one of `choices`
  integer_list,  ///< JSON array of integers, each within min/max ([32, 48, 64]; may be empty)
};

struct param_spec {
  std::string name;  ///< dotted path for nested params ("dataset.sample_bytes")
  param_type type = param_type::string;
  nlohmann::json default_value;  ///< in the normalised form; null = required (unless optional)
  /// May be left out: no default is filled in, and the engine sees it absent (a PyTorch call
  /// that was never made differs from any value it could have been made with).
  bool optional = false;
  std::vector<std::string> choices;  ///< for enumeration
  double min = 0;                    ///< inclusive lower bound for size/duration/integer/number
  bool min_exclusive = false;        ///< true: value must be > min (sizes "must be positive")
  std::optional<double> max;         ///< inclusive upper bound, when there is one
  std::string help;
  /// A rule beyond type and bounds (a config string that must parse): given the normalised
  /// value, returns what is wrong with it, or "" when it is fine. Empty function = no rule.
  std::function<std::string(const nlohmann::json&)> check;
};

/// One of `choices`, `def` when absent.
[[nodiscard]] param_spec enumeration(std::string name, std::vector<std::string> choices,
                                     std::string def, std::string help);

/// A size, duration, integer or number within [min, max] (`min_exclusive`: > min).
[[nodiscard]] param_spec bounded(std::string name, param_type type, nlohmann::json def, double min,
                                 bool min_exclusive, std::optional<double> max, std::string help);

[[nodiscard]] param_spec boolean(std::string name, bool def, std::string help);

/// Free text.
[[nodiscard]] param_spec text(std::string name, std::string def, std::string help);

/// Sets the param `dotted` ("batch_size", "dataset.samples") in a scenario's params object,
/// nested objects made as needed: what code that writes a scenario (tune's trials) writes each
/// param with, under the name the kind declares it by (its `param::` constants and choices), so
/// that a renamed param fails to compile there rather than at run time.
void set_param(nlohmann::json& params, std::string_view dotted, nlohmann::json value);

/// One value of an enumeration param: its name (in scenario files, `--set`, results and
/// messages) and the kind's enum value it stands for.
template <class E>
struct named {
  std::string_view name;
  E value;
};

namespace detail {
/// The value at `dotted` ("dataset.source") in a case's params, or nullptr.
[[nodiscard]] const nlohmann::json* find_param(const nlohmann::json& params,
                                               std::string_view dotted);
/// input_error(source, "params.NAME", "expected one of ..., got ...").
[[noreturn]] void throw_unknown_choice(std::string_view param,
                                       const std::vector<std::string>& names,
                                       const nlohmann::json* got, const std::string& source);
}  // namespace detail

/// An enumeration param as one table of names and enum values: the param's spec (`spec`) and
/// the parser of its value (`parse`) both read the table, so they cannot drift apart, and
/// `name` gives a value's name back for display. Declare the table and the choice in the
/// kind's params header:
///
///     enum class copy_mode { blocking, non_blocking };
///     inline constexpr named<copy_mode> copy_modes[] = {
///         {"blocking", copy_mode::blocking}, {"non_blocking", copy_mode::non_blocking}};
///     inline constexpr choice<copy_mode> mode_choice{"mode", copy_modes,
///                                                    copy_mode::non_blocking};
///
/// A table with a repeated name or value, or a default that is not in it, does not compile.
template <class E>
class choice {
 public:
  consteval choice(std::string_view param, std::span<const named<E>> table, E def)
      : param_(param), table_(table), def_(def) {
    bool has_default = false;
    for (std::size_t i = 0; i < table.size(); ++i) {
      has_default = has_default || table[i].value == def;
      for (std::size_t j = i + 1; j < table.size(); ++j)
        if (table[i].name == table[j].name || table[i].value == table[j].value)
          throw "an enumeration's table names each value once";  // not a constant: no compile
    }
    if (!has_default) throw "an enumeration's default is one of its values";
  }

  /// The param's name ("direction", "dataset.source").
  [[nodiscard]] constexpr std::string_view param() const { return param_; }
  [[nodiscard]] constexpr E default_value() const { return def_; }
  [[nodiscard]] constexpr std::span<const named<E>> table() const { return table_; }

  /// The value's name in the table ("" for a value the table does not hold, which the
  /// kind's tests rule out).
  [[nodiscard]] constexpr std::string_view name(E value) const {
    for (const auto& n : table_)
      if (n.value == value) return n.name;
    return {};
  }

  /// The value of that name, or none.
  [[nodiscard]] constexpr std::optional<E> find(std::string_view name) const {
    for (const auto& n : table_)
      if (n.name == name) return n.value;
    return std::nullopt;
  }

  /// Every name, in the table's order.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& n : table_) out.emplace_back(n.name);
    return out;
  }

  /// The param's spec: one of the table's names, the default's when absent.
  [[nodiscard]] param_spec spec(std::string help) const {
    return enumeration(std::string(param_), names(), std::string(name(def_)), std::move(help));
  }

  /// The value in a case's params (complete and normalised); a name the table does not hold,
  /// or none, is an input_error naming `source` and "params.NAME".
  [[nodiscard]] E parse(const nlohmann::json& params, const std::string& source) const {
    const nlohmann::json* v = detail::find_param(params, param_);
    if (v != nullptr && v->is_string())
      if (const auto e = find(v->get_ref<const std::string&>())) return *e;
    detail::throw_unknown_choice(param_, names(), v, source);
  }

 private:
  std::string_view param_;
  std::span<const named<E>> table_;
  E def_;
};

/// Sets an enumeration param to `value`, by its table's name for it.
template <class E>
void set_param(nlohmann::json& params, const choice<E>& c, E value) {
  set_param(params, c.param(), std::string(c.name(value)));
}

}  // namespace pinbench::kinds
