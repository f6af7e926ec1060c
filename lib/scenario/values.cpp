// Value rules of the scenario format: what each param type accepts, its normal form, its display.
#include "scenario/values.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "scenario/scenario.hpp"

namespace pinbench::scenario {

namespace detail {

namespace {

using nlohmann::json;

// How a type is named in "expected ..." messages, and how its bounds are written.
struct wording {
  std::string noun;     // "size", "integer"
  std::string example;  // `"64MiB"`, or empty when a bare bound reads better
  std::string (*show)(double);
};

std::string show_number(double v) {
  return fmt::format("{}", v);
}
std::string show_bytes(double v) {
  return format_bytes_compact(static_cast<std::uint64_t>(v));
}
std::string show_duration(double v) {
  return format_duration_compact(static_cast<std::int64_t>(v));
}

std::string with_article(const std::string& noun) {
  const bool vowel = noun.find_first_of("aeiou") == 0;
  return (vowel ? "an " : "a ") + noun;
}

// What a value under the lower bound (or of the wrong form) should have been.
std::string expect_low(const kinds::param_spec& s, const wording& w) {
  if (!std::isfinite(s.min)) return with_article(w.noun);
  if (s.min == 0 && !w.example.empty())
    return (s.min_exclusive ? "a positive " + w.noun : with_article(w.noun)) + " such as " +
           w.example;
  return with_article(w.noun) + (s.min_exclusive ? " > " : " >= ") + w.show(s.min);
}

checked problem(const std::string& expectation, const json& got, const std::string& hint = {}) {
  return {json(), "expected " + expectation + ", got " + shown(got) + hint};
}

// Bounds check shared by the numeric types; `magnitude` is empty when the form is wrong.
checked in_range(const kinds::param_spec& s, const json& got, std::optional<double> magnitude,
                 json normalised, const wording& w) {
  if (!magnitude || (s.min_exclusive ? *magnitude <= s.min : *magnitude < s.min))
    return problem(expect_low(s, w), got);
  if (s.max && *magnitude > *s.max)
    return problem(with_article(w.noun) + " <= " + w.show(*s.max), got);
  return {std::move(normalised), {}};
}

checked check_size(const kinds::param_spec& s, const json& v) {
  std::optional<std::uint64_t> bytes;
  if (v.is_string()) bytes = parse_bytes(v.get_ref<const std::string&>());
  if (v.is_number_unsigned()) bytes = v.get<std::uint64_t>();
  // A literal 0 in C++ (a default) is a signed JSON integer; parsed text gives unsigned.
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= 0)
    bytes = static_cast<std::uint64_t>(v.get<std::int64_t>());
  if (!bytes) return in_range(s, v, std::nullopt, json(), {"size", "\"64MiB\"", show_bytes});
  return in_range(s, v, static_cast<double>(*bytes), *bytes, {"size", "\"64MiB\"", show_bytes});
}

checked check_duration(const kinds::param_spec& s, const json& v) {
  std::optional<std::int64_t> ns;
  if (v.is_string()) ns = parse_duration_ns(v.get_ref<const std::string&>());
  // A bare number has no unit; only 0 means the same in every unit.
  if (v.is_number() && v.get<double>() == 0) ns = 0;
  const wording w{"duration", "\"10ms\"", show_duration};
  if (!ns) return in_range(s, v, std::nullopt, json(), w);
  return in_range(s, v, static_cast<double>(*ns), *ns, w);
}

void read_params_into(const kinds::kind_spec& kind, const nlohmann::ordered_json& obj,
                      const std::string& prefix, const std::string& source, json& out) {
  for (const auto& [key, value] : obj.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    const std::string path = "params." + escaped_line(name);
    if (const kinds::param_spec* spec = kind.find(name)) {
      auto c = check_value(*spec, value);
      if (!c.ok()) throw input_error(source, path, c.problem);
      set_dotted(out, name, std::move(c.value));
      continue;
    }
    const bool group =
        std::any_of(kind.params.begin(), kind.params.end(),
                    [&](const kinds::param_spec& p) { return p.name.starts_with(name + "."); });
    if (!group)
      throw input_error(source, path,
                        fmt::format("unknown param of kind \"{}\"{}", kind.kind,
                                    did_you_mean(name, kind.names())));
    if (!value.is_object())
      throw input_error(source, path, "expected an object of params, got " + shown(value));
    read_params_into(kind, value, name, source, out);
  }
}

// Every item an integer within the spec's bounds; `item [1]: ...` names the first one that is not.
checked check_integer_list(const kinds::param_spec& s, const json& v) {
  const wording w{"integer", "", show_number};
  if (!v.is_array()) {
    std::string expected = "a list of integers";
    if (std::isfinite(s.min))
      expected += fmt::format(" {} {}", s.min_exclusive ? ">" : ">=", show_number(s.min));
    return problem(expected + " such as [32, 48, 64]", v);
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& item = v[i];
    auto c = in_range(s, item,
                      item.is_number_integer() ? std::optional(item.get<double>()) : std::nullopt,
                      item, w);
    if (!c.ok()) return {json(), fmt::format("item [{}]: {}", i, c.problem)};
  }
  return {v, {}};
}

checked check_type(const kinds::param_spec& s, const json& v) {
  switch (s.type) {
    case kinds::param_type::size:
      return check_size(s, v);
    case kinds::param_type::duration:
      return check_duration(s, v);
    case kinds::param_type::integer:
      return in_range(s, v, v.is_number_integer() ? std::optional(v.get<double>()) : std::nullopt,
                      v, {"integer", "", show_number});
    case kinds::param_type::number:
      return in_range(s, v, v.is_number() ? std::optional(v.get<double>()) : std::nullopt,
                      v.is_number() ? json(v.get<double>()) : json(), {"number", "", show_number});
    case kinds::param_type::boolean:
      return v.is_boolean() ? checked{v, {}} : problem("true or false", v);
    case kinds::param_type::string:
      return v.is_string() ? checked{v, {}} : problem("a string", v);
    case kinds::param_type::enumeration: {
      if (v.is_string()) {
        const auto& text = v.get_ref<const std::string&>();
        for (const auto& c : s.choices)
          if (c == text) return {v, {}};
        return problem("one of " + quoted_list(s.choices), v, did_you_mean(text, s.choices));
      }
      return problem("one of " + quoted_list(s.choices), v);
    }
    case kinds::param_type::integer_list:
      return check_integer_list(s, v);
  }
  return problem("a valid value", v);
}

}  // namespace

json read_params(const kinds::kind_spec& kind, const nlohmann::ordered_json& params,
                 const std::string& source) {
  json out = json::object();
  read_params_into(kind, params, {}, source, out);
  return out;
}

checked check_value(const kinds::param_spec& s, const json& v) {
  checked c = check_type(s, v);
  if (c.ok() && s.check) c.problem = s.check(c.value);
  if (!c.ok()) c.value = json();
  return c;
}

std::string shown(const json& value) {
  constexpr std::size_t limit = 40;
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= limit) return text;
  std::size_t cut = limit - 3;
  // Never cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return text.substr(0, cut) + "...";
}

std::string escaped_line(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      const std::string quoted =
          json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
      return quoted.substr(1, quoted.size() - 2);
    }
  }
  return std::string(text);
}

std::string format_duration_compact(std::int64_t ns) {
  if (ns == 0) return "0";
  struct unit {
    std::int64_t ns;
    const char* name;
  };
  static constexpr std::array<unit, 3> units{
      {{1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}}};
  // The largest unit that shows the value exactly with at most three decimals.
  for (const auto& u : units)
    if (ns >= u.ns && ns % (u.ns / 1000) == 0)
      return fmt::format("{}{}", static_cast<double>(ns) / static_cast<double>(u.ns), u.name);
  return fmt::format("{}ns", ns);
}

const json* find_dotted(const json& params, std::string_view name) {
  const json* node = &params;
  while (true) {
    const auto dot = name.find('.');
    if (!node->is_object()) return nullptr;
    const auto it = node->find(std::string(name.substr(0, dot)));
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string_view::npos) return node;
    name.remove_prefix(dot + 1);
  }
}

void set_dotted(json& params, std::string_view name, json value) {
  json* node = &params;
  while (true) {
    const auto dot = name.find('.');
    node = &(*node)[std::string(name.substr(0, dot))];
    if (dot == std::string_view::npos) break;
    name.remove_prefix(dot + 1);
  }
  *node = std::move(value);
}

}  // namespace detail

nlohmann::json display_params(const std::string& kind, const nlohmann::json& params) {
  nlohmann::json out = params;
  const kinds::kind_spec* k = kinds::find(kind);
  if (k == nullptr) return out;
  for (const auto& p : k->params) {
    const nlohmann::json* v = detail::find_dotted(out, p.name);
    if (v == nullptr) continue;
    if (p.type == kinds::param_type::size && v->is_number_unsigned())
      detail::set_dotted(out, p.name, format_bytes_compact(v->get<std::uint64_t>()));
    else if (p.type == kinds::param_type::duration && v->is_number_integer())
      detail::set_dotted(out, p.name, detail::format_duration_compact(v->get<std::int64_t>()));
  }
  return out;
}

}  // namespace pinbench::scenario
