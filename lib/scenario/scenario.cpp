// The scenario document: parsing and validating it, `--set` overrides, and matrix expansion.
#include "scenario/scenario.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <unordered_map>

#include "core/error.hpp"
#include "core/json_limits.hpp"
#include "core/text.hpp"
#include "kinds/registry.hpp"
#include "scenario/sampling_schema.hpp"
#include "scenario/values.hpp"

namespace pinbench::scenario {

namespace {

using nlohmann::json;
// The document is read in file order: matrix axes (and so case order and ids) follow it.
using ordered = nlohmann::ordered_json;
using detail::shown;

constexpr std::string_view schema_id = "pinbench.scenario/1";

const std::vector<std::string>& top_level_keys() {
  static const std::vector<std::string> keys = {
      "schema", "name", "description", "kind", "params", "matrix", "sampling", "gate", "tags"};
  return keys;
}

std::vector<std::string> sampling_names(std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& p : sampling_params()) out.push_back(std::string(prefix) + p.name);
  return out;
}

const kinds::param_spec& sampling_param(std::string_view name) {
  const auto& all = sampling_params();
  return *std::find_if(all.begin(), all.end(),
                       [&](const kinds::param_spec& p) { return p.name == name; });
}

// Stores one normalised sampling value in the struct the engines read.
void set_sampling(struct sampling& s, std::string_view name, const json& v) {
  if (name == "warmup") s.warmup = v.get<int>();
  if (name == "min_samples") s.min_samples = v.get<int>();
  if (name == "max_samples") s.max_samples = v.get<int>();
  if (name == "max_noise") s.max_noise = v.get<double>();
  if (name == "min_time") s.min_time_ns = v.get<std::int64_t>();
  if (name == "timeout") s.timeout_ns = v.get<std::int64_t>();
}

// max_samples must not undercut min_samples. When it was not given, it follows min_samples up.
std::string reconcile_samples(struct sampling& s, bool max_given) {
  if (s.max_samples >= s.min_samples) return {};
  if (!max_given) {
    s.max_samples = s.min_samples;
    return {};
  }
  return fmt::format("expected an integer >= min_samples ({}), got {}", s.min_samples,
                     s.max_samples);
}

// JSON keys as they appear in paths and messages, kept on one line.
std::string key_text(const std::string& key) {
  return detail::escaped_line(key);
}

// A text that is the same for any two values that compare equal (json's operator==, which
// takes 1 and 1.0 as equal): numbers as doubles, containers element by element. Values with
// the same key are then compared for real.
void append_equality_key(const json& v, std::string& out) {
  switch (v.type()) {
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: {
      const double d = v.get<double>();
      out += 'n';
      out += d == 0 ? std::string("0") : fmt::format("{}", d);  // -0.0 == 0.0
      break;
    }
    case json::value_t::array:
      out += '[';
      for (const auto& item : v) {
        append_equality_key(item, out);
        out += ',';
      }
      out += ']';
      break;
    case json::value_t::object:
      out += '{';
      for (const auto& [k, item] : v.items()) {
        out += std::to_string(k.size());  // the key's bytes, length first: no escaping needed
        out += ':';
        out += k;
        append_equality_key(item, out);
        out += ',';
      }
      out += '}';
      break;
    default:  // strings, booleans, null; a string that is not UTF-8 cannot make dump throw
      out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

std::string equality_key(const json& v) {
  std::string out;
  append_equality_key(v, out);
  return out;
}

std::string case_id_part(const json& raw) {
  // An empty string (the default config, say) would vanish from the id: show it quoted.
  if (raw.is_string())
    return raw.get_ref<const std::string&>().empty() ? "\"\"" : raw.get<std::string>();
  return raw.dump();
}

[[noreturn]] void throw_syntax_error(const json::parse_error& e, std::string_view text,
                                     const std::string& source) {
  // parse_error::byte is the 1-based offset of the last character read: the offending one.
  const std::size_t pos = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0U) != 0x80U) {
      ++column;  // columns count characters, not the bytes of UTF-8 sequences
    }
  }
  std::string reason = e.what();
  if (const auto dash = reason.find(" - "); dash != std::string::npos) {
    reason.erase(0, dash + 3);
  } else if (const auto colon = reason.rfind(": "); colon != std::string::npos) {
    reason.erase(0, colon + 2);
  }
  reason = detail::escaped_line(reason);
  if (reason.size() > 120) reason = reason.substr(0, 117) + "...";
  throw input_error(source, {},
                    fmt::format("line {}, column {}: JSON syntax error: {}", line, column, reason));
}

// Validates one scenario document; every problem is an input_error naming source and JSON path.
class document_parser {
 public:
  explicit document_parser(const std::string& source) : source_(source) {}

  scenario parse(const ordered& doc) {
    if (!doc.is_object()) fail("(root)", "expected an object (a scenario), got " + shown(doc));
    // The schema first: another kind of file (a result) should be told as such.
    if (doc.contains("schema")) check_schema(doc["schema"]);
    for (const auto& [key, value] : doc.items()) {
      if (std::find(top_level_keys().begin(), top_level_keys().end(), key) ==
          top_level_keys().end())
        fail(key_text(key), "unknown key" + did_you_mean(key, top_level_keys()));
    }
    (void)required(doc, "schema");
    scenario s;
    s.source = source_;
    s.name = parse_name(required(doc, "name"));
    if (doc.contains("description")) s.description = text(doc["description"], "description");
    const kinds::kind_spec& kind = parse_kind(required(doc, "kind"));
    s.kind = kind.kind;
    if (doc.contains("tags")) s.tags = parse_tags(doc["tags"]);
    if (doc.contains("params")) {
      expect_object(doc["params"], "params", "an object of params");
      s.params = detail::read_params(kind, doc["params"], source_);
    }
    if (doc.contains("matrix")) s.matrix = parse_matrix(kind, doc["matrix"]);
    fill_defaults(kind, s);
    if (doc.contains("sampling")) s.sampling = parse_sampling(doc["sampling"]);
    if (doc.contains("gate")) s.gate = parse_gate(doc["gate"]);
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw input_error(source_, path, message);
  }

  const ordered& required(const ordered& doc, const char* key) const {
    if (!doc.contains(key)) fail(key, "required key is missing");
    return doc[key];
  }

  void expect_object(const ordered& v, const std::string& path, const std::string& what) const {
    if (!v.is_object()) fail(path, "expected " + what + ", got " + shown(v));
  }

  std::string text(const ordered& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + shown(v));
    return v.get<std::string>();
  }

  json value_of(const kinds::param_spec& spec, const ordered& v, const std::string& path) const {
    auto c = detail::check_value(spec, v);
    if (!c.ok()) fail(path, c.problem);
    return std::move(c.value);
  }

  void check_schema(const ordered& v) const {
    if (!v.is_string() || v.get_ref<const std::string&>() != schema_id)
      fail("schema", fmt::format("expected \"{}\", got {}", schema_id, shown(v)));
  }

  std::string parse_name(const ordered& v) const {
    const bool ok = v.is_string() && !v.get_ref<const std::string&>().empty() &&
                    std::all_of(v.get_ref<const std::string&>().begin(),
                                v.get_ref<const std::string&>().end(), [](char c) {
                                  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                                         c == '.' || c == '_' || c == '-';
                                });
    if (!ok) fail("name", "expected a name of letters, digits, '.', '_' and '-', got " + shown(v));
    return v.get<std::string>();
  }

  const kinds::kind_spec& parse_kind(const ordered& v) const {
    std::vector<std::string> names;
    for (const auto* k : kinds::all()) names.push_back(k->kind);
    if (!v.is_string()) fail("kind", "expected one of " + quoted_list(names) + ", got " + shown(v));
    const auto& name = v.get_ref<const std::string&>();
    const kinds::kind_spec* k = kinds::find(name);
    if (k == nullptr)
      fail("kind", fmt::format("unknown kind {}, expected {}{}", shown(v), quoted_list(names),
                               did_you_mean(name, names)));
    return *k;
  }

  std::vector<std::string> parse_tags(const ordered& v) const {
    if (!v.is_array()) fail("tags", "expected a list of strings, got " + shown(v));
    std::vector<std::string> tags;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string() || v[i].get_ref<const std::string&>().empty())
        fail(fmt::format("tags[{}]", i), "expected a non-empty string, got " + shown(v[i]));
      tags.push_back(v[i].get<std::string>());
    }
    return tags;
  }

  std::vector<matrix_axis> parse_matrix(const kinds::kind_spec& kind, const ordered& m) const {
    expect_object(m, "matrix", "an object of param -> list of values");
    std::vector<matrix_axis> axes;
    for (const auto& [key, values] : m.items()) {
      const std::string path = "matrix." + key_text(key);
      const kinds::param_spec* spec = kind.find(key);
      if (spec == nullptr)
        fail(path, fmt::format("unknown param of kind \"{}\"{}", kind.kind,
                               did_you_mean(key, kind.names())));
      if (!values.is_array() || values.empty()) fail(path, "expected a non-empty list of values");
      matrix_axis axis{key, {}, {}};
      // Earlier values by equality_key: a repeat is found in one look-up, not a scan of all.
      std::unordered_map<std::string, std::vector<std::size_t>> seen;
      seen.reserve(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::string item_path = fmt::format("{}[{}]", path, i);
        json v = value_of(*spec, values[i], item_path);
        auto& same_key = seen[equality_key(v)];
        const auto same = std::find_if(same_key.begin(), same_key.end(),
                                       [&](std::size_t j) { return axis.normalised[j] == v; });
        if (same != same_key.end())
          fail(item_path, fmt::format("repeats the value of {}[{}]", path, *same));
        same_key.push_back(i);
        axis.raw.emplace_back(values[i]);
        axis.normalised.push_back(std::move(v));
      }
      // The case count is checked when the matrix is expanded, after --set has dropped axes.
      axes.push_back(std::move(axis));
    }
    return axes;
  }

  // Every param ends up present: from params, else its default, else the matrix's first value.
  void fill_defaults(const kinds::kind_spec& kind, scenario& s) const {
    for (const auto& p : kind.params) {
      if (detail::find_dotted(s.params, p.name) != nullptr) continue;
      const auto axis = std::find_if(s.matrix.begin(), s.matrix.end(),
                                     [&](const matrix_axis& a) { return a.param == p.name; });
      if (!p.default_value.is_null())
        detail::set_dotted(s.params, p.name, p.default_value);
      else if (axis != s.matrix.end())
        detail::set_dotted(s.params, p.name, axis->normalised.front());
      else if (!p.optional)
        fail("params." + p.name, "required param is missing");
    }
  }

  struct sampling parse_sampling(const ordered& obj) const {
    expect_object(obj, "sampling", "an object");
    struct sampling s;
    for (const auto& [key, value] : obj.items()) {
      const std::string path = "sampling." + key_text(key);
      const auto names = sampling_names("");
      if (std::find(names.begin(), names.end(), key) == names.end())
        fail(path, "unknown sampling key" + did_you_mean(key, names));
      set_sampling(s, key, value_of(sampling_param(key), value, path));
    }
    if (auto problem = reconcile_samples(s, obj.contains("max_samples")); !problem.empty())
      fail("sampling.max_samples", problem);
    return s;
  }

  json parse_gate(const ordered& gate) const {
    expect_object(gate, "gate", "an object of metric -> {\"threshold\": ...}");
    for (const auto& [metric, rule] : gate.items()) {
      const std::string path = "gate." + key_text(metric);
      if (metric.empty()) fail("gate", "expected metric names, got an empty key");
      expect_object(rule, path, "an object such as {\"threshold\": 0.05}");
      for (const auto& [key, value] : rule.items()) {
        if (key != "threshold")
          fail(path + "." + key_text(key), "unknown gate key" + did_you_mean(key, {"threshold"}));
        if (!value.is_number() || value.get<double>() < 0)
          fail(path + ".threshold", "expected a number >= 0, got " + shown(value));
      }
    }
    return gate;
  }

  const std::string& source_;
};

// A `--set` checked against a scenario: which param (or sampling key) and its normalised value.
struct resolved_override {
  std::string label;  // "--set bytes=1MiB", for messages
  bool is_sampling = false;
  std::string name;  // param name, or the sampling key without "sampling."
  json value;
};

std::vector<resolved_override> resolve(const scenario& s,
                                       const std::vector<override_spec>& overrides) {
  const kinds::kind_spec* kind = kinds::find(s.kind);
  if (kind == nullptr) throw input_error(s.source, "kind", "unknown kind \"" + s.kind + "\"");
  std::vector<resolved_override> out;
  for (const auto& o : overrides) {
    resolved_override r{detail::escaped_line("--set " + o.key + "=" + o.value), false, o.key, {}};
    const kinds::param_spec* spec = kind->find(o.key);
    if (o.key.starts_with("sampling.")) {
      r.is_sampling = true;
      r.name = o.key.substr(9);
      const auto names = sampling_names("");
      if (std::find(names.begin(), names.end(), r.name) == names.end())
        throw input_error(
            r.label, {}, "unknown sampling key" + did_you_mean(o.key, sampling_names("sampling.")));
      spec = &sampling_param(r.name);
    } else if (spec == nullptr) {
      // "warmup" is too far from "sampling.warmup" for an edit distance to find it.
      const auto sampling_keys = sampling_names("");
      const bool is_sampling_key =
          std::find(sampling_keys.begin(), sampling_keys.end(), o.key) != sampling_keys.end();
      const std::string hint = is_sampling_key ? " (did you mean \"sampling." + o.key + "\"?)"
                                               : did_you_mean(o.key, kind->names());
      throw input_error(
          r.label, {},
          fmt::format("unknown param of kind \"{}\" in scenario \"{}\"{}", s.kind, s.name, hint));
    }
    // JSON first (3, true, "x"), then the text as a string (64MiB, pinned, 2ms).
    check_json_depth(o.value, r.label);
    const json parsed = json::parse(o.value, nullptr, false);
    if (!parsed.is_discarded()) check_duplicate_keys(o.value, r.label);
    auto c = parsed.is_discarded() ? detail::checked{{}, "not JSON"}
                                   : detail::check_value(*spec, parsed);
    // A list may be typed without brackets (--set batch_sizes=32,48,64). Once the text reads
    // as a list, its items' problem is the one to report.
    bool read_as_list = spec->type == kinds::param_type::integer_list && parsed.is_array();
    if (!c.ok() && spec->type == kinds::param_type::integer_list && !read_as_list) {
      const json listed = json::parse("[" + o.value + "]", nullptr, false);
      read_as_list = !listed.is_discarded();
      if (read_as_list) c = detail::check_value(*spec, listed);
    }
    if (!c.ok() && !read_as_list) c = detail::check_value(*spec, o.value);
    if (!c.ok()) throw input_error(r.label, {}, c.problem);
    r.value = std::move(c.value);
    out.push_back(std::move(r));
  }
  return out;
}

// The scenario's sampling with the sampling.* overrides applied and checked.
struct sampling overridden_sampling(const scenario& s, const std::vector<resolved_override>& rs) {
  struct sampling out = s.sampling;
  const resolved_override* max_override = nullptr;
  for (const auto& r : rs) {
    if (!r.is_sampling) continue;
    set_sampling(out, r.name, r.value);
    if (r.name == "max_samples") max_override = &r;
  }
  if (auto problem = reconcile_samples(out, max_override != nullptr); !problem.empty())
    throw input_error(max_override->label, {}, problem);
  return out;
}

// The matrix axes that remain once overrides replaced theirs.
std::vector<const matrix_axis*> remaining_axes(const scenario& s,
                                               const std::vector<resolved_override>& resolved) {
  std::vector<const matrix_axis*> axes;
  for (const auto& a : s.matrix) axes.push_back(&a);
  for (const auto& r : resolved)
    if (!r.is_sampling)
      std::erase_if(axes, [&](const matrix_axis* a) { return a->param == r.name; });
  return axes;
}

std::uint64_t saturated_product(const std::vector<const matrix_axis*>& axes) {
  std::uint64_t total = 1;
  for (const auto* a : axes) {
    const std::uint64_t n = a->raw.size();
    if (n != 0 && total > UINT64_MAX / n) return UINT64_MAX;
    total *= n;
  }
  return total;
}

// The exact product in decimal, however large: a count that overflows 64 bits is still stated.
std::string exact_product(const std::vector<const matrix_axis*>& axes) {
  std::vector<std::uint32_t> digits{1};  // least significant first, base 10
  for (const auto* a : axes) {
    std::uint64_t carry = 0;
    for (auto& d : digits) {
      const std::uint64_t v = std::uint64_t{d} * a->raw.size() + carry;
      d = static_cast<std::uint32_t>(v % 10);
      carry = v / 10;
    }
    for (; carry > 0; carry /= 10) digits.push_back(static_cast<std::uint32_t>(carry % 10));
  }
  std::string out;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) out += static_cast<char>('0' + *it);
  return out;
}

std::string factors_of(const std::vector<const matrix_axis*>& axes) {
  std::string factors;
  for (const auto* a : axes) {
    if (!factors.empty()) factors += " x ";
    factors += fmt::format("{} {}", a->raw.size(), key_text(a->param));
  }
  return factors;
}

void check_case_count(const scenario& s, const std::vector<const matrix_axis*>& axes,
                      std::uint64_t max_cases) {
  // A saturated count is beyond 64 bits: more than any limit.
  if (const std::uint64_t n = saturated_product(axes); n != UINT64_MAX && n <= max_cases) return;
  throw input_error(s.source, "matrix",
                    fmt::format("expands to {} cases ({}), more than the limit of {}; split the "
                                "scenario, fix a param with --set, or raise the limit with "
                                "--max-cases",
                                exact_product(axes), factors_of(axes), max_cases));
}

// What expand() builds from: the checked overrides, the sampling, the remaining axes and the
// params every case starts from.
struct expansion {
  const kinds::kind_spec* kind = nullptr;
  struct sampling samp;
  std::vector<const matrix_axis*> axes;
  json params;
  std::uint64_t count = 0;
};

expansion prepare(const scenario& s, const std::vector<override_spec>& overrides,
                  std::uint64_t max_cases) {
  const auto resolved = resolve(s, overrides);
  expansion e;
  e.samp = overridden_sampling(s, resolved);
  e.axes = remaining_axes(s, resolved);
  check_case_count(s, e.axes, max_cases);
  e.count = saturated_product(e.axes);
  e.params = s.params;
  for (const auto& r : resolved)
    if (!r.is_sampling) detail::set_dotted(e.params, r.name, r.value);
  e.kind = kinds::find(s.kind);
  return e;
}

// Case number `n` of the expansion: mixed-radix digits of n, the last axis least significant
// (it varies fastest).
case_spec build_case(const scenario& s, const expansion& e, std::uint64_t n) {
  case_spec c{{}, e.params, {}, e.samp, s.source};
  std::vector<std::size_t> index(e.axes.size());
  std::uint64_t rest = n;
  for (std::size_t i = e.axes.size(); i-- > 0;) {
    index[i] = static_cast<std::size_t>(rest % e.axes[i]->raw.size());
    rest /= e.axes[i]->raw.size();
  }
  for (std::size_t i = 0; i < e.axes.size(); ++i) {
    detail::set_dotted(c.params, e.axes[i]->param, e.axes[i]->normalised[index[i]]);
    if (i > 0) c.id += ",";
    c.id += e.axes[i]->param + "=" + case_id_part(e.axes[i]->raw[index[i]]);
  }
  if (e.axes.empty()) c.id = "default";
  if (e.kind != nullptr && e.kind->parse_case) c.typed = e.kind->parse_case(c.params, s.source);
  return c;
}

}  // namespace

scenario parse_scenario(std::string_view text, const std::string& source) {
  // Before the DOM parse: its values are copied and compared recursively.
  check_json_depth(text, source);
  ordered doc;
  try {
    doc = ordered::parse(text);
  } catch (const json::parse_error& e) {
    throw_syntax_error(e, text, source);
  } catch (const json::exception& e) {
    // A number beyond a double's range ("1e400") comes as out_of_range, without a position.
    std::string reason = e.what();
    if (const auto p = reason.find("] "); p != std::string::npos) reason.erase(0, p + 2);
    reason = detail::escaped_line(reason);
    if (reason.size() > 120) reason = reason.substr(0, 117) + "...";
    throw input_error(source, {}, "invalid JSON: " + reason);
  }
  // The parse kept the last of two equal keys; the file's author meant one of them.
  check_duplicate_keys(text, source);
  return document_parser(source).parse(doc);
}

scenario parse_scenario_document(const ordered& doc, const std::string& source) {
  return document_parser(source).parse(doc);
}

std::vector<override_spec> parse_overrides(const std::vector<std::string>& args) {
  std::vector<override_spec> out;
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw input_error(detail::escaped_line("--set " + a), {}, "expected KEY=VALUE");
    out.push_back({a.substr(0, eq), a.substr(eq + 1)});
  }
  return out;
}

void check_overrides(const scenario& s, const std::vector<override_spec>& overrides) {
  (void)overridden_sampling(s, resolve(s, overrides));
}

std::uint64_t count_cases(const scenario& s, const std::vector<override_spec>& overrides) {
  return saturated_product(remaining_axes(s, resolve(s, overrides)));
}

std::uint64_t checked_case_count(const scenario& s, const std::vector<override_spec>& overrides,
                                 std::uint64_t max_cases) {
  return prepare(s, overrides, max_cases).count;
}

namespace {
std::atomic<std::uint64_t> expansion_count{0};
}  // namespace

std::uint64_t expansions() noexcept {
  return expansion_count.load();
}

std::vector<case_spec> expand(const scenario& s, const std::vector<override_spec>& overrides,
                              std::uint64_t max_cases) {
  expansion_count.fetch_add(1);
  const expansion e = prepare(s, overrides, max_cases);
  // Whatever --max-cases allows, the cases must fit in memory: refused before one is built.
  if (e.count > max_built_cases)
    throw input_error(
        s.source, "matrix",
        fmt::format("expands to {} cases ({}), more than pinbench builds for one scenario ({}, "
                    "whatever --max-cases says); split the scenario or fix a param with --set",
                    exact_product(e.axes), factors_of(e.axes), max_built_cases));
  std::vector<case_spec> cases;
  cases.reserve(static_cast<std::size_t>(e.count));
  for (std::uint64_t n = 0; n < e.count; ++n) cases.push_back(build_case(s, e, n));
  return cases;
}

void for_each_case(const scenario& s, const std::vector<override_spec>& overrides,
                   std::uint64_t max_cases, const std::function<void(const case_spec&)>& visit) {
  expansion_count.fetch_add(1);
  const expansion e = prepare(s, overrides, max_cases);
  for (std::uint64_t n = 0; n < e.count; ++n) visit(build_case(s, e, n));
}

std::vector<std::pair<std::string, std::string>> shown_defaults(const std::string& kind) {
  std::vector<std::pair<std::string, std::string>> out;
  const kinds::kind_spec* k = kinds::find(kind);
  if (k == nullptr) return out;
  nlohmann::json defaults = nlohmann::json::object();
  for (const auto& p : k->params)
    if (!p.default_value.is_null()) detail::set_dotted(defaults, p.name, p.default_value);
  const nlohmann::json shown = display_params(kind, defaults);
  for (const auto& p : k->params) {
    const auto* v = detail::find_dotted(shown, p.name);
    out.emplace_back(p.name, v != nullptr ? v->dump() : p.optional ? "unset" : "required");
  }
  return out;
}

}  // namespace pinbench::scenario
