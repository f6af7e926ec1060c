// Limits of the JSON readers: deep nesting and huge files get a one-line input error (exit 2 at
// the command line), never a stack overflow or an exhausted host. Inputs are built here.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "alloc/workload.hpp"
#include "cli_runner.hpp"
#include "core/error.hpp"
#include "core/json_limits.hpp"
#include "result/result_io.hpp"
#include "scenario/scenario.hpp"

namespace {

namespace fs = std::filesystem;
using pinbench::input_error;
using pinbench::testing::fresh_dir;
using pinbench::testing::run_pinbench;

constexpr std::size_t very_deep = 100'000;

std::string nested_arrays(std::size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// The message of the input_error `f` throws, checked to be one line.
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    const std::string message = e.what();
    CHECK(message.find('\n') == std::string::npos);
    return message;
  }
  FAIL("no input_error was thrown");
  return {};
}

const std::string scenario_head =
    R"({"schema": "pinbench.scenario/1", "name": "deep", "kind": "transfer", "params": {"bytes": )";

}  // namespace

TEST_CASE("JSON nesting: the depth check counts brackets outside strings only", "[fuzz][limits]") {
  CHECK_NOTHROW(pinbench::check_json_depth(nested_arrays(128), "f"));
  CHECK(input_error_of([] { pinbench::check_json_depth(nested_arrays(129), "f"); }) ==
        "f: line 1, column 129: JSON nests deeper than 128 levels of arrays and objects");
  // Brackets in strings, escaped quotes included, are text.
  CHECK_NOTHROW(pinbench::check_json_depth("[\"" + std::string(1000, '[') + "\\\"{{{\"]", "f"));
  CHECK(input_error_of([] { pinbench::check_json_depth("{\n  \"a\": [[[", "f", 3); }) ==
        "f: line 2, column 10: JSON nests deeper than 3 levels of arrays and objects");
}

TEST_CASE("JSON nesting: a scenario nested 100000 deep is a one-line error", "[fuzz][limits]") {
  const std::string text = scenario_head + nested_arrays(very_deep) + "}}";
  CHECK(input_error_of([&] { (void)pinbench::scenario::parse_scenario(text, "deep.json"); }) ==
        "deep.json: line 1, column 217: JSON nests deeper than 128 levels of arrays and objects");
  // 100000 objects, and brackets that never close, end the same way.
  std::string objects;
  for (std::size_t i = 0; i < very_deep; ++i) objects += "{\"a\":";
  CHECK_THAT(input_error_of([&] { (void)pinbench::scenario::parse_scenario(objects, "o.json"); }),
             Catch::Contains("JSON nests deeper than 128 levels"));
  // Nesting within the limit reaches the schema checks as before.
  CHECK_THAT(input_error_of([&] {
               (void)pinbench::scenario::parse_scenario(scenario_head + nested_arrays(100) + "}}",
                                                        "ok.json");
             }),
             Catch::Contains("ok.json: params.bytes: expected a positive size"));
}

TEST_CASE("JSON nesting: a --set value nested 100000 deep is a one-line error", "[fuzz][limits]") {
  const auto s = pinbench::scenario::parse_scenario(scenario_head + "\"1MiB\"}}", "s.json");
  const auto overrides = pinbench::scenario::parse_overrides({"bytes=" + nested_arrays(very_deep)});
  CHECK_THAT(input_error_of([&] { pinbench::scenario::check_overrides(s, overrides); }),
             Catch::Contains("JSON nests deeper than 128 levels"));
}

TEST_CASE("JSON nesting: a trace nested 100000 deep is a one-line error", "[fuzz][limits]") {
  const auto dir = fresh_dir("fuzz-deep-trace");
  auto drain = [](const fs::path& p) {
    auto source = pinbench::alloc::open_trace(p.string());
    pinbench::alloc::event e;
    while (source->next(e)) {
    }
  };
  // The SAX reader accepts no nesting below an event's fields: it stops at the first bracket
  // too many, whatever follows.
  const fs::path in_events = dir / "events.json";
  write(in_events, R"({"schema": "pinbench.trace/1", "events": )" + nested_arrays(very_deep) + "}");
  CHECK(input_error_of([&] { drain(in_events); }) ==
        in_events.string() + ": events[0]: expected an event object, got an array");
  const fs::path in_field = dir / "field.json";
  write(in_field,
        R"({"schema": "pinbench.trace/1", "events": [{"op": )" + nested_arrays(very_deep) + "}]}");
  CHECK_THAT(input_error_of([&] { drain(in_field); }),
             Catch::Contains("events[0].op: expected \"alloc\""));
  fs::remove_all(dir);
}

TEST_CASE("a CSV trace line longer than any RMM row is refused before it is read whole",
          "[fuzz][limits]") {
  const auto dir = fresh_dir("fuzz-long-line");
  const fs::path p = dir / "long.csv";
  write(p, "Thread,Time,Action,Pointer,Size,Stream\n" + std::string(1 << 20, '1'));
  auto source = pinbench::alloc::open_trace(p.string());
  pinbench::alloc::event e;
  CHECK(input_error_of([&] { (void)source->next(e); }) ==
        p.string() + ": line 2: longer than 4096 characters: expected a row of the RMM log");
  fs::remove_all(dir);
}

TEST_CASE("huge scenario and result files are refused before they are read", "[fuzz][limits]") {
  const auto dir = fresh_dir("fuzz-huge");
  // Sparse files: their size is what counts, and they take no disk space.
  const fs::path scenario_file = dir / "huge.json";
  write(scenario_file, "{");
  fs::resize_file(scenario_file, pinbench::max_scenario_file_bytes + 1);
  CHECK(input_error_of([&] { (void)pinbench::scenario::load_scenario_file(scenario_file); }) ==
        scenario_file.string() +
            ": too large: more than 64 MiB, the most pinbench reads of this kind of file");
  const fs::path result_file = dir / "huge-result.json";
  write(result_file, "{");
  fs::resize_file(result_file, pinbench::max_result_file_bytes + 1);
  CHECK_THAT(
      input_error_of([&] { (void)pinbench::result::read_result_file(result_file.string()); }),
      Catch::Contains("too large: more than 512 MiB"));
  fs::remove_all(dir);
}

TEST_CASE("a result file nested 100000 deep is a one-line error", "[fuzz][limits]") {
  const auto dir = fresh_dir("fuzz-deep-result");
  const fs::path p = dir / "deep-result.json";
  write(p, R"({"schema": "pinbench.result/1", "x": )" + nested_arrays(very_deep) + "}");
  CHECK_THAT(input_error_of([&] { (void)pinbench::result::read_result_file(p.string()); }),
             Catch::Contains("JSON nests deeper than 128 levels"));
  fs::remove_all(dir);
}

TEST_CASE("at the command line, deep and huge inputs exit 2 with one line", "[fuzz][limits][cli]") {
  const auto dir = fresh_dir("fuzz-cli-limits");
  const fs::path deep = dir / "deep.json";
  write(deep, scenario_head + nested_arrays(very_deep) + "}}");
  auto o = run_pinbench("validate " + deep.string());
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("deep.json: line 1, column 217: JSON nests deeper than 128"));
  CHECK(o.err.find('\n') == o.err.size() - 1);

  const fs::path result = dir / "deep-result.json";
  write(result, nested_arrays(very_deep));
  o = run_pinbench("compare " + result.string() + " " + result.string());
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("JSON nests deeper than 128"));
  o = run_pinbench("report " + result.string());
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("JSON nests deeper than 128"));

  const fs::path huge = dir / "huge.json";
  write(huge, "{");
  fs::resize_file(huge, pinbench::max_scenario_file_bytes + 1);
  o = run_pinbench("validate " + huge.string());
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("too large: more than 64 MiB"));
  fs::remove_all(dir);
}

TEST_CASE("a JSON trace holding one huge token is refused, not read into memory",
          "[fuzz][limits][slow]") {
  const auto dir = fresh_dir("fuzz-huge-token");
  const fs::path p = dir / "token.json";
  {
    std::ofstream out(p, std::ios::binary);
    out << R"({"schema": "pinbench.trace/1", "events": [{"op": "mark", "label": ")";
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 66; ++i) out << block;
    out << "\"}]}";
  }
  auto source = pinbench::alloc::open_trace(p.string());
  pinbench::alloc::event e;
  CHECK_THAT(input_error_of([&] { (void)source->next(e); }),
             Catch::Contains("more than 64 MiB without a complete JSON value"));
  fs::remove_all(dir);
}

TEST_CASE("a number beyond a double's range is a one-line input error", "[fuzz][limits]") {
  // nlohmann reports it as out_of_range, not parse_error: it used to escape the readers.
  CHECK(input_error_of([] {
          (void)pinbench::scenario::parse_scenario(scenario_head + "1e400}}", "n.json");
        }) == "n.json: invalid JSON: number overflow parsing '1e400'");
  const auto dir = fresh_dir("fuzz-overflow");
  const fs::path p = dir / "result.json";
  write(p, R"({"schema": "pinbench.result/1", "x": 1e400})");
  CHECK(input_error_of([&] { (void)pinbench::result::read_result_file(p.string()); }) ==
        p.string() + ": not valid JSON: number overflow parsing '1e400'");
  fs::remove_all(dir);
}

TEST_CASE("duplicate keys: found in any object, by decoded key, with path and position",
          "[fuzz][limits]") {
  using pinbench::check_duplicate_keys;
  CHECK(input_error_of([] {
          check_duplicate_keys(R"({"a": [1, {"b": 0, "c": {"b": 1}}, {"x": 1, "x": 2}]})", "f");
        }) == R"(f: a[2].x: duplicate key "x" (line 1, column 45))");
  // Siblings and nested objects may use the same keys; text inside strings is text.
  CHECK_NOTHROW(check_duplicate_keys(R"([{"a": 1}, {"a": 2, "b": {"a": 3}}])", "f"));
  CHECK_NOTHROW(check_duplicate_keys(R"({"a": "}, {\"a\": 1", "b": ["\"a\":"]})", "f"));
  // Escapes are decoded before comparing; a control character stays escaped in the message.
  CHECK(input_error_of([] { check_duplicate_keys("{\"a\\n\": 1,\n \"a\\u000a\": 2}", "f"); }) ==
        R"(f: a\n: duplicate key "a\n" (line 2, column 2))");
  // Past the first few keys a hash set takes over: a repeat is still found.
  std::string many = "{";
  for (int i = 0; i < 1000; ++i)
    many += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  CHECK_NOTHROW(check_duplicate_keys(many + "\"end\": 0}", "f"));
  CHECK_THAT(input_error_of([&] { check_duplicate_keys(many + "\"k3\": 0}", "f"); }),
             Catch::StartsWith(R"(f: k3: duplicate key "k3" (line 1, column )"));
}

TEST_CASE("duplicate keys: in a result file and at the command line", "[fuzz][limits][cli]") {
  const auto dir = fresh_dir("fuzz-duplicate-keys");
  const fs::path result = dir / "result.json";
  write(result, "{\"schema\": \"pinbench.result/1\",\n \"schema\": \"pinbench.result/1\"}");
  CHECK(input_error_of([&] { (void)pinbench::result::read_result_file(result.string()); }) ==
        result.string() + R"(: schema: duplicate key "schema" (line 2, column 2))");
  const fs::path scenario = dir / "s.json";
  write(scenario, scenario_head + R"("1MiB", "bytes": "2MiB"}})");
  auto o = run_pinbench("validate " + scenario.string());
  CHECK(o.code == 2);
  CHECK(o.err == "pinbench: error: " + scenario.string() +
                     R"(: params.bytes: duplicate key "bytes" (line 1, column 99))" + "\n");
  o = run_pinbench("report " + result.string());
  CHECK(o.code == 2);
  CHECK_THAT(o.err, Catch::Contains("duplicate key \"schema\""));
  fs::remove_all(dir);
}
