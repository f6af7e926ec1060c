#include <catch2/catch.hpp>

#include "core/units.hpp"
#include "kinds/registry.hpp"
#include "scenario/sampling_schema.hpp"
#include "scenario/scenario.hpp"
#include "scenario/values.hpp"
#include "scenario_helpers.hpp"

using namespace pinbench;
using namespace pinbench::scenario;
using nlohmann::json;
using pinbench::testing::transfer_doc;

namespace {

std::vector<std::string> ids_of(const std::vector<case_spec>& cases) {
  std::vector<std::string> ids;
  for (const auto& c : cases) ids.push_back(c.id);
  return ids;
}

}  // namespace

TEST_CASE("a minimal scenario gets every default, normalised", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(), "t.json");
  CHECK(s.name == "t");
  CHECK(s.kind == "transfer");
  CHECK(s.source == "t.json");
  CHECK(s.description.empty());
  CHECK(s.tags.empty());
  CHECK(s.matrix.empty());
  CHECK(s.params == json{{"direction", "h2d"},
                         {"memory", "pinned"},
                         {"mode", "non_blocking"},
                         {"bytes", 64_MiB},
                         {"copies_per_sample", 0},
                         {"overlap_compute", 0},
                         {"verify", true}});
  CHECK(s.params["bytes"].is_number_unsigned());
  CHECK(s.sampling.warmup == 3);
  CHECK(s.sampling.min_samples == 10);
  CHECK(s.sampling.max_samples == 200);
  CHECK(s.sampling.max_noise == Approx(0.01));
  CHECK(s.sampling.min_time_ns == 200'000'000);
  CHECK(s.sampling.timeout_ns == 10'000'000'000);
  CHECK(s.gate == json::object());
}

TEST_CASE("params, sampling, gate and tags are read and normalised", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(R"(
      "description": "pinned vs pageable",
      "tags": ["quick", "h2d"],
      "params": {"direction": "d2h", "memory": "pageable", "mode": "blocking", "bytes": "4KiB",
                 "copies_per_sample": 8, "overlap_compute": "2ms", "verify": false},
      "sampling": {"warmup": 0, "min_samples": 5, "max_samples": 7, "max_noise": 1,
                   "min_time": "1.5ms", "timeout": "2s"},
      "gate": {"bandwidth": {"threshold": 0.05}, "copy_time": {}})"),
                                "t.json");
  CHECK(s.description == "pinned vs pageable");
  CHECK(s.tags == std::vector<std::string>{"quick", "h2d"});
  CHECK(s.params["direction"] == "d2h");
  CHECK(s.params["memory"] == "pageable");
  CHECK(s.params["mode"] == "blocking");
  CHECK(s.params["bytes"] == 4096);
  CHECK(s.params["copies_per_sample"] == 8);
  CHECK(s.params["overlap_compute"] == 2'000'000);
  CHECK(s.params["verify"] == false);
  CHECK(s.sampling.warmup == 0);
  CHECK(s.sampling.min_samples == 5);
  CHECK(s.sampling.max_samples == 7);
  CHECK(s.sampling.max_noise == Approx(1.0));
  CHECK(s.sampling.min_time_ns == 1'500'000);
  CHECK(s.sampling.timeout_ns == 2'000'000'000);
  CHECK(s.gate["bandwidth"]["threshold"] == Approx(0.05));
  CHECK(s.gate.contains("copy_time"));
}

TEST_CASE("sizes are accepted as strings or non-negative integers", "[scenario]") {
  CHECK(parse_scenario(transfer_doc(R"("params": {"bytes": 512})"), "t").params["bytes"] == 512);
  CHECK(parse_scenario(transfer_doc(R"("params": {"bytes": "2GiB"})"), "t").params["bytes"] ==
        2_GiB);
  CHECK(parse_scenario(transfer_doc(R"("params": {"bytes": "1TiB"})"), "t").params["bytes"] ==
        1ull << 40);
  CHECK(parse_scenario(transfer_doc(R"("params": {"overlap_compute": 0})"), "t")
            .params["overlap_compute"] == 0);
}

TEST_CASE("min_samples above the default max_samples raises max_samples", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(R"("sampling": {"min_samples": 500})"), "t");
  CHECK(s.sampling.min_samples == 500);
  CHECK(s.sampling.max_samples == 500);
}

TEST_CASE("the matrix keeps file order and both raw and normalised values", "[scenario]") {
  const auto s = parse_scenario(
      transfer_doc(R"("matrix": {"mode": ["blocking", "non_blocking"], "bytes": ["1MiB", 4096]})"),
      "t");
  REQUIRE(s.matrix.size() == 2);
  CHECK(s.matrix[0].param == "mode");
  CHECK(s.matrix[1].param == "bytes");
  CHECK(s.matrix[1].raw == std::vector<json>{"1MiB", 4096});
  CHECK(s.matrix[1].normalised == std::vector<json>{1_MiB, 4096});
}

TEST_CASE("expand: cartesian product, last axis fastest, ids from values as written",
          "[scenario]") {
  // "memory" sorts after "bytes" alphabetically: the file order must win.
  const auto s = parse_scenario(transfer_doc(R"(
      "params": {"direction": "d2h"},
      "matrix": {"memory": ["pageable", "pinned"], "bytes": ["64KiB", 1048576, "16MiB"],
                 "verify": [true]})"),
                                "t");
  const auto cases = expand(s);
  CHECK(ids_of(cases) ==
        std::vector<std::string>{
            "memory=pageable,bytes=64KiB,verify=true", "memory=pageable,bytes=1048576,verify=true",
            "memory=pageable,bytes=16MiB,verify=true", "memory=pinned,bytes=64KiB,verify=true",
            "memory=pinned,bytes=1048576,verify=true", "memory=pinned,bytes=16MiB,verify=true"});
  CHECK(cases[1].params["memory"] == "pageable");
  CHECK(cases[1].params["bytes"] == 1_MiB);
  CHECK(cases[5].params["memory"] == "pinned");
  CHECK(cases[5].params["bytes"] == 16_MiB);
  for (const auto& c : cases) {
    CHECK(c.params["direction"] == "d2h");  // params outside the matrix reach every case
    CHECK(c.params.size() == s.params.size());
    CHECK(c.sampling.max_samples == s.sampling.max_samples);
  }
}

namespace {

// "[1, 2, ..., n]"
std::string one_to(int n) {
  std::string s = "[";
  for (int i = 1; i <= n; ++i) s += (i > 1 ? ", " : "") + std::to_string(i);
  return s + "]";
}

}  // namespace

TEST_CASE("a matrix is counted from its factors, expand builds at most max_built_cases",
          "[scenario][limits]") {
  // 1000 x 1000 x 1000 = 10^9 cases: counted at once, never built.
  const auto s = parse_scenario(
      R"({"schema": "pinbench.scenario/1", "name": "billion", "kind": "loader", "matrix": {)"
      R"("dataset.samples": )" +
          one_to(1000) + R"(, "batch_size": )" + one_to(1000) + R"(, "batches": )" + one_to(1000) +
          "}}",
      "b.json");
  CHECK(count_cases(s) == 1'000'000'000u);
  CHECK(checked_case_count(s, {}, 2'000'000'000u) == 1'000'000'000u);
  CHECK(pinbench::testing::input_error_of([&] { (void)checked_case_count(s, {}, 100'000); }) ==
        "b.json: matrix: expands to 1000000000 cases (1000 dataset.samples x 1000 batch_size x "
        "1000 batches), more than the limit of 100000; split the scenario, fix a param with "
        "--set, or raise the limit with --max-cases");
  // Whatever the limit, expand refuses to build more than fits, before building one.
  CHECK(max_built_cases == 1'000'000u);
  CHECK(pinbench::testing::input_error_of([&] { (void)expand(s, {}, UINT64_MAX); }) ==
        "b.json: matrix: expands to 1000000000 cases (1000 dataset.samples x 1000 batch_size x "
        "1000 batches), more than pinbench builds for one scenario (1000000, whatever "
        "--max-cases says); split the scenario or fix a param with --set");
  // With two axes fixed by --set, 1000 cases remain: built, and visited one by one in order.
  const std::vector<override_spec> sets = {{"batch_size", "8"}, {"batches", "2"}};
  CHECK(checked_case_count(s, sets, 1000) == 1000);
  const auto cases = expand(s, sets);
  std::vector<std::string> visited;
  for_each_case(s, sets, 1000, [&](const case_spec& c) { visited.push_back(c.id); });
  CHECK(visited == ids_of(cases));
  CHECK(visited.back() == "dataset.samples=1000");
}

TEST_CASE("expand without a matrix gives one case named default", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(), "t");
  const auto cases = expand(s);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].id == "default");
  CHECK(cases[0].params == s.params);
}

TEST_CASE("an override replaces a param everywhere and drops its matrix axis", "[scenario]") {
  const auto s = parse_scenario(
      transfer_doc(R"("matrix": {"memory": ["pageable", "pinned"], "bytes": ["4KiB", "8KiB"]})"),
      "t");
  const auto cases = expand(s, parse_overrides({"bytes=64MiB", "mode=blocking"}));
  CHECK(ids_of(cases) == std::vector<std::string>{"memory=pageable", "memory=pinned"});
  for (const auto& c : cases) {
    CHECK(c.params["bytes"] == 64_MiB);
    CHECK(c.params["mode"] == "blocking");
  }

  const auto single = expand(s, parse_overrides({"memory=pinned_wc", "bytes=1024"}));
  REQUIRE(single.size() == 1);
  CHECK(single[0].id == "default");
  CHECK(single[0].params["memory"] == "pinned_wc");
  CHECK(single[0].params["bytes"] == 1024);
}

TEST_CASE("override values are JSON first, then plain text", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(), "t");
  const auto cases = expand(
      s, parse_overrides({"copies_per_sample=3", "verify=false", R"(memory="registered")",
                          "overlap_compute=2ms", "direction=bidirectional", "bytes=1.5KiB"}));
  REQUIRE(cases.size() == 1);
  const auto& p = cases[0].params;
  CHECK(p["copies_per_sample"] == 3);
  CHECK(p["verify"] == false);
  CHECK(p["memory"] == "registered");
  CHECK(p["overlap_compute"] == 2'000'000);
  CHECK(p["direction"] == "bidirectional");
  CHECK(p["bytes"] == 1536);
}

TEST_CASE("parse_overrides splits at the first '='", "[scenario]") {
  const auto o = parse_overrides({"a=b=c", "bytes="});
  REQUIRE(o.size() == 2);
  CHECK(o[0].key == "a");
  CHECK(o[0].value == "b=c");
  CHECK(o[1].key == "bytes");
  CHECK(o[1].value.empty());
}

TEST_CASE("sampling overrides reach every case", "[scenario]") {
  const auto s = parse_scenario(transfer_doc(R"("matrix": {"mode": ["blocking", "non_blocking"]},
                      "sampling": {"min_samples": 4, "max_samples": 50})"),
                                "t");
  const auto o = parse_overrides({"sampling.warmup=0", "sampling.timeout=30s",
                                  "sampling.max_noise=0.5", "sampling.min_time=0"});
  check_overrides(s, o);
  const auto cases = expand(s, o);
  REQUIRE(cases.size() == 2);
  for (const auto& c : cases) {
    CHECK(c.sampling.warmup == 0);
    CHECK(c.sampling.min_samples == 4);
    CHECK(c.sampling.max_samples == 50);
    CHECK(c.sampling.max_noise == Approx(0.5));
    CHECK(c.sampling.min_time_ns == 0);
    CHECK(c.sampling.timeout_ns == 30'000'000'000);
  }
  CHECK(s.sampling.warmup == 3);  // the scenario itself is untouched

  // min_samples may rise past the file's max_samples only if max_samples is raised with it.
  CHECK(expand(s, parse_overrides({"sampling.min_samples=80"}))[0].sampling.max_samples == 80);
  CHECK(
      pinbench::testing::input_error_of([&] {
        check_overrides(s, parse_overrides({"sampling.min_samples=80", "sampling.max_samples=60"}));
      }) == "--set sampling.max_samples=60: expected an integer >= min_samples (80), got 60");
}

TEST_CASE("display_params writes sizes and durations as people do", "[scenario]") {
  const auto s = parse_scenario(
      transfer_doc(R"("params": {"bytes": 1572864, "overlap_compute": "1.5ms"})"), "t");
  const auto shown = display_params("transfer", s.params);
  CHECK(shown["bytes"] == "1536KiB");
  CHECK(shown["overlap_compute"] == "1.5ms");
  CHECK(shown["memory"] == "pinned");
  CHECK(shown["copies_per_sample"] == 0);
  CHECK(display_params("transfer", json{{"bytes", 64_MiB}, {"overlap_compute", 0}}) ==
        json{{"bytes", "64MiB"}, {"overlap_compute", "0"}});
  CHECK(display_params("no-such-kind", s.params) == s.params);
}

TEST_CASE("compact durations are exact and round-trip", "[scenario]") {
  using detail::format_duration_compact;
  CHECK(format_duration_compact(0) == "0");
  CHECK(format_duration_compact(2'000'000) == "2ms");
  CHECK(format_duration_compact(1'500'000) == "1.5ms");
  CHECK(format_duration_compact(500'000) == "500us");
  CHECK(format_duration_compact(10'000'000'000) == "10s");
  CHECK(format_duration_compact(750) == "750ns");
  CHECK(format_duration_compact(1'234'567) == "1234.567us");
  for (const std::int64_t ns :
       std::initializer_list<std::int64_t>{1, 999, 1000, 1'500'000, 1'234'567, 60'000'000'000})
    CHECK(parse_duration_ns(format_duration_compact(ns)) == ns);
}

TEST_CASE("nested params use dotted names", "[scenario]") {
  json params = json::object();
  detail::set_dotted(params, "dataset.samples", 10);
  detail::set_dotted(params, "dataset.source", "file");
  detail::set_dotted(params, "batch_size", 4);
  CHECK(params == json{{"dataset", {{"samples", 10}, {"source", "file"}}}, {"batch_size", 4}});
  REQUIRE(detail::find_dotted(params, "dataset.source") != nullptr);
  CHECK(*detail::find_dotted(params, "dataset.source") == "file");
  CHECK(detail::find_dotted(params, "dataset.missing") == nullptr);
  CHECK(detail::find_dotted(params, "batch_size.x") == nullptr);
}
