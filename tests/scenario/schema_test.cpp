// The schema itself: every default is a valid value, lookups work, nested params parse, and an
// enumeration's spec and parser come from one table (kinds::choice).
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "core/text.hpp"
#include "kinds/registry.hpp"
#include "scenario/sampling_schema.hpp"
#include "scenario/values.hpp"
#include "scenario_helpers.hpp"

using namespace pinbench;
using namespace pinbench::scenario;
using nlohmann::json;

TEST_CASE("every default is valid and already normalised", "[scenario][schema]") {
  auto check_specs = [](const std::vector<kinds::param_spec>& specs) {
    for (const auto& p : specs) {
      INFO(p.name);
      CHECK_FALSE(p.help.empty());
      if (p.default_value.is_null()) continue;  // required
      // Durations are stored in ns but written with a unit; a bare number means nothing.
      const json written =
          p.type == kinds::param_type::duration
              ? json(detail::format_duration_compact(p.default_value.get<std::int64_t>()))
              : p.default_value;
      const auto c = detail::check_value(p, written);
      CHECK(c.problem == "");
      CHECK(c.value == p.default_value);
    }
  };
  REQUIRE_FALSE(kinds::all().empty());
  for (const auto* k : kinds::all()) {
    INFO(k->kind);
    CHECK_FALSE(k->help.empty());
    check_specs(k->params);
  }
  check_specs(sampling_params());
}

TEST_CASE("the transfer kind has its params", "[scenario][schema]") {
  const kinds::kind_spec* k = kinds::find("transfer");
  REQUIRE(k != nullptr);
  CHECK(k->names() == std::vector<std::string>{"direction", "memory", "mode", "bytes",
                                               "copies_per_sample", "overlap_compute", "verify"});
  REQUIRE(k->find("memory") != nullptr);
  CHECK(k->find("memory")->choices == std::vector<std::string>{"pageable", "pinned", "pinned_wc",
                                                               "registered", "pin_on_the_fly"});
  CHECK(k->find("bytes")->type == kinds::param_type::size);
  CHECK(k->find("nope") == nullptr);
  CHECK(kinds::find("tranfer") == nullptr);
}

TEST_CASE("nested params are written as nested objects", "[scenario][schema]") {
  // A stand-in kind: no shipped kind has nested params yet, the loader will.
  kinds::kind_spec k{"nested", "test kind", {}};
  kinds::param_spec samples;
  samples.name = "dataset.samples";
  samples.type = kinds::param_type::integer;
  samples.min = 1;
  samples.default_value = 8;
  kinds::param_spec batch = samples;
  batch.name = "batch_size";
  k.params = {samples, batch};

  const auto params =
      nlohmann::ordered_json::parse(R"({"dataset": {"samples": 5}, "batch_size": 2})");
  CHECK(detail::read_params(k, params, "f.json") ==
        json{{"dataset", {{"samples", 5}}}, {"batch_size", 2}});

  auto error = [&](const char* text) {
    return pinbench::testing::input_error_of(
        [&] { (void)detail::read_params(k, nlohmann::ordered_json::parse(text), "f.json"); });
  };
  CHECK(
      error(R"({"dataset": {"sampels": 5}})") ==
      R"(f.json: params.dataset.sampels: unknown param of kind "nested" (did you mean "dataset.samples"?))");
  CHECK(error(R"({"dataset": {"samples": 0}})") ==
        "f.json: params.dataset.samples: expected an integer >= 1, got 0");
  CHECK(error(R"({"dataset": 3})") ==
        "f.json: params.dataset: expected an object of params, got 3");
}

namespace {

enum class schema_test_flavour { plain, salted, smoked };
constexpr kinds::named<schema_test_flavour> schema_test_flavours[] = {
    {"plain", schema_test_flavour::plain},
    {"salted", schema_test_flavour::salted},
    {"smoked", schema_test_flavour::smoked}};
constexpr kinds::choice<schema_test_flavour> schema_test_flavour_choice{
    "snack.flavour", schema_test_flavours, schema_test_flavour::salted};

// A kind's complete params, every one at its default (nested params as nested objects).
json schema_test_defaults_of(const kinds::kind_spec& k) {
  json params = json::object();
  for (const auto& p : k.params) {
    if (p.default_value.is_null()) continue;  // optional, left out
    std::string pointer = "/" + p.name;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    params[json::json_pointer(pointer)] = p.default_value;
  }
  return params;
}

}  // namespace

TEST_CASE("choice: the param's spec and its parser read one table", "[scenario][schema][choice]") {
  const auto& c = schema_test_flavour_choice;
  const kinds::param_spec spec = c.spec("what the snack tastes of");
  CHECK(spec.name == "snack.flavour");
  CHECK(spec.type == kinds::param_type::enumeration);
  CHECK(spec.choices == std::vector<std::string>{"plain", "salted", "smoked"});
  CHECK(spec.default_value == "salted");
  CHECK(spec.help == "what the snack tastes of");
  CHECK(c.default_value() == schema_test_flavour::salted);
  // Every name the spec offers parses (from the nested params), to the value of that name.
  for (const auto& name : spec.choices) {
    INFO(name);
    CHECK(detail::check_value(spec, name).problem == "");
    const auto v = c.parse(json{{"snack", {{"flavour", name}}}}, "s.json");
    CHECK(c.name(v) == name);
    CHECK(c.find(name) == v);
  }
  CHECK(c.name(schema_test_flavour::smoked) == "smoked");
  CHECK_FALSE(c.find("sweet"));
}

TEST_CASE("choice: a value outside the table is an input error naming the param",
          "[scenario][schema][choice]") {
  const auto& c = schema_test_flavour_choice;
  const auto error_of = [&](const json& params) -> std::optional<input_error> {
    try {
      (void)c.parse(params, "dir/s.json");
    } catch (const input_error& e) {
      return e;
    }
    return std::nullopt;
  };
  const auto unknown = error_of({{"snack", {{"flavour", "sweet"}}}});
  REQUIRE(unknown);
  CHECK(unknown->file() == "dir/s.json");
  CHECK(unknown->json_path() == "params.snack.flavour");
  CHECK(unknown->message() == R"(expected one of "plain", "salted" or "smoked", got "sweet")");
  CHECK(std::string(unknown->what()) == "dir/s.json: params.snack.flavour: " + unknown->message());
  const auto number = error_of({{"snack", {{"flavour", 3}}}});
  REQUIRE(number);
  CHECK(number->json_path() == "params.snack.flavour");
  CHECK(number->message() == R"(expected one of "plain", "salted" or "smoked", got 3)");
  const auto missing = error_of({{"snack", json::object()}});
  REQUIRE(missing);
  CHECK(missing->json_path() == "params.snack.flavour");
  CHECK(missing->message() == R"(expected one of "plain", "salted" or "smoked", got nothing)");
  CHECK(error_of({{"snack", "plain"}}).has_value());  // not an object on the way
}

TEST_CASE("every enumeration param of every kind parses each of its choices and no other value",
          "[scenario][schema][choice]") {
  std::size_t enumerations = 0;
  for (const auto* k : kinds::all()) {
    const json defaults = schema_test_defaults_of(*k);
    REQUIRE_NOTHROW(k->parse_case(defaults, "k.json"));
    for (const auto& p : k->params) {
      if (p.type != kinds::param_type::enumeration) continue;
      ++enumerations;
      std::string pointer = "/" + p.name;
      std::replace(pointer.begin(), pointer.end(), '.', '/');
      const std::string path = "params." + p.name;
      for (const auto& name : p.choices) {
        INFO(k->kind << " " << p.name << " = " << name);
        json params = defaults;
        params[json::json_pointer(pointer)] = name;
        // Another param's rule may refuse the combination (workload trace needs a trace
        // file); this param's value never is.
        try {
          (void)k->parse_case(params, "k.json");
        } catch (const input_error& e) {
          CHECK(e.json_path() != path);
        }
      }
      INFO(k->kind << " " << p.name << " = no_such_value");
      json params = defaults;
      params[json::json_pointer(pointer)] = "no_such_value";
      const std::string message =
          testing::input_error_of([&] { (void)k->parse_case(params, "k.json"); });
      CHECK(message == "k.json: " + path + ": expected one of " + quoted_list(p.choices) +
                           ", got \"no_such_value\"");
    }
  }
  CHECK(enumerations == 14);  // transfer 3, loader 5, allocator 3, collective 2, data_parallel 1
}
