// The allocator kind's params: defaults, the integer list type, and the checks that stop a
// scenario at load time (bad enum, bad PYTORCH_CUDA_ALLOC_CONF text, a trace without a file).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.hpp"
#include "core/units.hpp"
#include "kinds/registry.hpp"
#include "scenario/sampling_schema.hpp"
#include "scenario/scenario.hpp"
#include "scenario_helpers.hpp"

using namespace pinbench;
using namespace pinbench::scenario;
using nlohmann::json;
using pinbench::testing::input_error_of;
namespace fs = std::filesystem;

namespace {

std::string allocator_doc(const std::string& extra = {}) {
  return R"({"schema": "pinbench.scenario/1", "name": "a", "kind": "allocator")" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

std::string load_error(const std::string& extra) {
  return input_error_of([&] { (void)parse_scenario(allocator_doc(extra), "a.json"); });
}

std::string expand_error(const std::string& extra, std::vector<override_spec> sets = {}) {
  return input_error_of([&] {
    const auto s = parse_scenario(allocator_doc(extra), "a.json");
    check_overrides(s, sets);
    (void)expand(s, sets);
  });
}

}  // namespace

TEST_CASE("the allocator kind fills in its defaults", "[scenario][allocator]") {
  const auto s = parse_scenario(allocator_doc(), "dir/a.json");
  CHECK(s.params["allocator"] == "caching");
  CHECK(s.params["config"] == "");
  CHECK(s.params["device_memory"] == 8_GiB);
  // Optional: left out, set_per_process_memory_fraction is never called (PyTorch 2.6).
  CHECK_FALSE(s.params.contains("memory_fraction"));
  CHECK(s.params["timing"] == "auto");
  CHECK(s.params["empty_cache_every"] == 0);
  CHECK(s.params["workload"] == "training_loop");
  CHECK(s.params["layers"] == 24);
  CHECK(s.params["activation_bytes"] == 64_MiB);
  CHECK(s.params["parameter_bytes"] == 16_MiB);
  CHECK(s.params["iterations"] == 20);
  CHECK(s.params["base_batch"] == 32);
  CHECK(s.params["batch_sizes"] == json::array());
  CHECK(s.params["count"] == 10000);
  CHECK(s.params["max_bytes"] == 8_MiB);
  CHECK(s.params["alloc_probability"] == Approx(0.6));
  CHECK(s.params["trace_file"] == "");

  const auto cases = expand(s);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].source == "dir/a.json");

  const auto defaults = shown_defaults("allocator");
  auto shown = [&](const std::string& name) {
    for (const auto& [n, v] : defaults)
      if (n == name) return v;
    return std::string("(absent)");
  };
  CHECK(shown("device_memory") == "\"8GiB\"");
  CHECK(shown("batch_sizes") == "[]");
  CHECK(shown("config") == "\"\"");
  CHECK(shown("memory_fraction") == "unset");
}

TEST_CASE("allocator enums and bounds are checked", "[scenario][allocator]") {
  CHECK(
      load_error(R"("params": {"allocator": "cachng"})") ==
      R"(a.json: params.allocator: expected one of "caching", "raw" or "async", got "cachng" (did you mean "caching"?))");
  CHECK(load_error(R"("params": {"workload": "trac"})").find("did you mean \"trace\"") !=
        std::string::npos);
  CHECK(load_error(R"("params": {"memory_fraction": 0})") == "(no error)");  // as PyTorch
  CHECK(load_error(R"("params": {"memory_fraction": -0.1})") ==
        "a.json: params.memory_fraction: expected a number >= 0, got -0.1");
  CHECK(load_error(R"("params": {"memory_fraction": 1.5})") ==
        "a.json: params.memory_fraction: expected a number <= 1, got 1.5");
  CHECK(load_error(R"("params": {"alloc_probability": 1})") ==
        "a.json: params.alloc_probability: expected a number < 1, got 1");
  CHECK(load_error(R"("params": {"alloc_probability": 0})") ==
        "a.json: params.alloc_probability: expected a number > 0, got 0");
  CHECK(load_error(R"("params": {"layer": 3})") ==
        R"(a.json: params.layer: unknown param of kind "allocator" (did you mean "layers"?))");
  CHECK(load_error(R"("params": {"empty_cache_every": -1})") ==
        "a.json: params.empty_cache_every: expected an integer >= 0, got -1");
  // 0 is allowed: on the cuda backend it means the device's whole memory.
  CHECK(parse_scenario(allocator_doc(R"("params": {"device_memory": 0})"), "a")
            .params.at("device_memory") == 0);
}

TEST_CASE("a bad config string stops the scenario at load time", "[scenario][allocator]") {
  const auto e = load_error(R"("params": {"config": "max_split_size_mb:abc"})");
  CHECK(e.rfind("a.json: params.config: ", 0) == 0);
  CHECK(e.find("max_split_size_mb") != std::string::npos);

  CHECK(load_error(R"("params": {"config": "max_split_size:128"})").find("did you mean") !=
        std::string::npos);
  // In a matrix, the path names the item.
  CHECK(load_error(R"("matrix": {"config": ["", "expandable_segments:Maybe"]})")
            .rfind("a.json: matrix.config[1]: ", 0) == 0);
  // A --set override is checked too, before anything runs.
  CHECK(expand_error("", {{"config", "roundup_power2_divisions:3"}})
            .rfind("--set config=roundup_power2_divisions:3: ", 0) == 0);

  // Good ones load; "env" is read from the environment when the case runs.
  for (const char* good : {"", "env", "max_split_size_mb:128", "expandable_segments:True",
                           "max_split_size_mb:64,roundup_power2_divisions:4"}) {
    INFO(good);
    CHECK(load_error(std::string(R"("params": {"config": ")") + good + "\"}") == "(no error)");
  }
}

TEST_CASE("batch_sizes is a list of positive integers", "[scenario][allocator]") {
  const auto s = parse_scenario(allocator_doc(R"("params": {"batch_sizes": [32, 48, 64]})"), "a");
  CHECK(s.params["batch_sizes"] == json::array({32, 48, 64}));

  CHECK(load_error(R"("params": {"batch_sizes": [32, 0]})") ==
        "a.json: params.batch_sizes: item [1]: expected an integer >= 1, got 0");
  CHECK(load_error(R"("params": {"batch_sizes": [32, "48"]})") ==
        R"(a.json: params.batch_sizes: item [1]: expected an integer >= 1, got "48")");
  CHECK(
      load_error(R"("params": {"batch_sizes": "32,48"})") ==
      R"(a.json: params.batch_sizes: expected a list of integers >= 1 such as [32, 48, 64], got "32,48")");
  CHECK(load_error(R"("params": {"batch_sizes": [1.5]})") ==
        "a.json: params.batch_sizes: item [0]: expected an integer >= 1, got 1.5");

  // --set takes the list with or without brackets.
  const auto plain = parse_scenario(allocator_doc(), "a");
  CHECK(expand(plain, {{"batch_sizes", "32,48,64"}}).at(0).params["batch_sizes"] ==
        json::array({32, 48, 64}));
  CHECK(expand(plain, {{"batch_sizes", "[16]"}}).at(0).params["batch_sizes"] == json::array({16}));
  CHECK(expand(plain, {{"batch_sizes", "8"}}).at(0).params["batch_sizes"] == json::array({8}));
  CHECK(expand(plain, {{"batch_sizes", "[]"}}).at(0).params["batch_sizes"] == json::array());
  CHECK(expand_error("", {{"batch_sizes", "32,0"}}) ==
        "--set batch_sizes=32,0: item [1]: expected an integer >= 1, got 0");
  CHECK(expand_error("", {{"batch_sizes", "[32,0]"}}) ==
        "--set batch_sizes=[32,0]: item [1]: expected an integer >= 1, got 0");
  CHECK(expand_error("", {{"batch_sizes", "32,x"}})
            .rfind("--set batch_sizes=32,x: expected a list", 0) == 0);

  // Shown as the JSON array, and usable as a matrix axis.
  CHECK(display_params("allocator", s.params)["batch_sizes"] == json::array({32, 48, 64}));
  const auto m = parse_scenario(allocator_doc(R"("matrix": {"batch_sizes": [[], [32, 64]]})"), "a");
  const auto cases = expand(m);
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].id == "batch_sizes=[]");
  CHECK(cases[1].id == "batch_sizes=[32,64]");
}

TEST_CASE("a trace workload needs a trace file, checked before running", "[scenario][allocator]") {
  CHECK(expand_error(R"("params": {"workload": "trace"})") ==
        R"(a.json: params.trace_file: required when workload is "trace")");
  CHECK(expand_error(R"("matrix": {"workload": ["random", "trace"]})") ==
        R"(a.json: params.trace_file: required when workload is "trace")");
  CHECK(expand_error("", {{"workload", "trace"}}) ==
        R"(a.json: params.trace_file: required when workload is "trace")");
  // The file is checked too (see below): one that is not there is refused at load.
  CHECK(expand_error(R"("params": {"workload": "trace", "trace_file": "no-such-trace.json"})") ==
        "a.json: params.trace_file: no-such-trace.json: cannot open the trace file: No such file "
        "or directory");
}

TEST_CASE("a trace file must be a readable regular file of a known format, checked at load",
          "[scenario][allocator]") {
  const fs::path dir = pinbench::testing::fresh_dir("allocator-trace-file");
  const auto error_for = [](const std::string& trace) {
    return expand_error(R"("params": {"workload": "trace", "trace_file": )" + json(trace).dump() +
                        "}");
  };
  const auto write_text = [](const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  };
  write_text(dir / "t.json", R"({"schema": "pinbench.trace/1", "events": []})");
  write_text(dir / "rmm.csv", "Thread,Time,Action,Pointer,Size,Stream\n");
  CHECK(error_for((dir / "t.json").string()) == "(no error)");
  CHECK(error_for((dir / "rmm.csv").string()) == "(no error)");

  const std::string prefix = "a.json: params.trace_file: ";
  CHECK(error_for((dir / "missing.json").string()) ==
        prefix + (dir / "missing.json").string() +
            ": cannot open the trace file: No such file or directory");
  CHECK(error_for(dir.string()) ==
        prefix + dir.string() + ": is a directory, expected a trace file");
  CHECK_THAT(error_for("/dev/zero"),
             Catch::StartsWith(prefix + "/dev/zero: is a character device, expected a regular "
                                        "file"));
  const fs::path fifo = dir / "fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(error_for(fifo.string()),  // refused from stat: opening it would wait for a writer
             Catch::StartsWith(prefix + fifo.string() +
                               ": is a FIFO (named pipe), expected a "
                               "regular file"));
  write_text(dir / "empty.json", "  \n");
  CHECK_THAT(error_for((dir / "empty.json").string()), Catch::Contains("the trace is empty"));
  // A snapshot pickle: its PROTO byte and protocol at load; the rest when the case reads it.
  write_text(dir / "snapshot.pickle", "\x80\x02}q\x00");
  CHECK(error_for((dir / "snapshot.pickle").string()) == "(no error)");
  write_text(dir / "future.pickle", "\x80\x07}.");
  CHECK(error_for((dir / "future.pickle").string()) ==
        prefix + (dir / "future.pickle").string() +
            ": offset 0: expected a pickle of protocol 2 to 5 (a PyTorch memory snapshot), got "
            "protocol 7");
  write_text(dir / "other.csv", "a,b,c\n1,2,3\n");
  CHECK_THAT(error_for((dir / "other.csv").string()),
             Catch::StartsWith(prefix + (dir / "other.csv").string() +
                               ": line 1: expected a pinbench.trace/1 JSON trace"));
  if (::geteuid() != 0) {  // root reads any file
    write_text(dir / "locked.json", "{}");
    fs::permissions(dir / "locked.json", fs::perms::none);
    CHECK(error_for((dir / "locked.json").string()) ==
          prefix + (dir / "locked.json").string() +
              ": cannot open the trace file: Permission denied");
  }
  // Only a trace workload reads it: another workload ignores a stale path.
  CHECK(expand_error(R"("params": {"workload": "random", "trace_file": "/dev/zero"})") ==
        "(no error)");
  fs::remove_all(dir);
}
