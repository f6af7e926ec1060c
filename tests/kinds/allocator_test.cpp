// The allocator engine on the host backend: out-of-memory as a result, deterministic policy
// counters, empty_cache_every, raw vs caching device calls, traces, snapshots, and the shipped
// fragmentation scenario's claim. No timing thresholds: only counters are compared.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds_support.hpp"
#include "run/runner.hpp"
#include "scenario/scenario.hpp"
#include "test_paths.hpp"

using namespace pinbench;
using nlohmann::json;
namespace fs = std::filesystem;

using pinbench::testing::counter;
using pinbench::testing::find_case;

namespace {

const char* k_allocator_sampling =
    R"("sampling": {"warmup": 0, "min_samples": 2, "max_samples": 2, "min_time": "0", "timeout": "10s"})";

std::string allocator_doc(const std::string& params, const std::string& matrix = {}) {
  return std::string(R"({"schema": "pinbench.scenario/1", "name": "a", "kind": "allocator", )") +
         R"("params": )" + params + ", " + (matrix.empty() ? "" : R"("matrix": )" + matrix + ", ") +
         k_allocator_sampling + "}";
}

result::run_result run_scenario(const scenario::scenario& s, std::uint64_t seed = 1,
                                bool snapshots = false,
                                std::vector<scenario::override_spec> sets = {}) {
  auto dev = device::platform::host().open(0);
  run::plan_settings settings;
  settings.seed = seed;
  settings.overrides = std::move(sets);
  run::run_options o;
  o.want_snapshots = snapshots;
  return run::run_scenarios(run::make_plan({s}, settings), *dev, o);
}

result::run_result run_allocator_text(const std::string& text, std::uint64_t seed = 1,
                                      bool snapshots = false) {
  return run_scenario(scenario::parse_scenario(text, "test.json"), seed, snapshots);
}

// A small training loop, 4 layers of 4 MiB activations and 1 MiB parameters, left open for more.
const char* k_small_loop = R"({"layers": 4, "activation_bytes": "4MiB", "parameter_bytes": "1MiB")";

}  // namespace

TEST_CASE("an out-of-memory error inside the workload is counted, not fatal",
          "[bench][allocator]") {
  // 8 layers of 64 MiB activations cannot fit in 256 MiB.
  const auto r = run_allocator_text(
      allocator_doc(R"({"layers": 8, "activation_bytes": "64MiB", "iterations": 3,
                                 "device_memory": "256MiB"})"));
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(counter(c, "num_ooms") > 0);
  CHECK(counter(c, "num_ooms") == c.extra.at("ops").at("ooms").get<double>());
  CHECK(counter(c, "reserved_bytes.all.peak") <= 256.0 * (1 << 20));
  REQUIRE(c.extra.contains("first_oom"));
  CHECK_FALSE(c.extra["first_oom"].get<std::string>().empty());
  // The frees of allocations that failed are not "unknown": nothing was skipped.
  CHECK(c.extra["ops"]["skipped_frees"] == 0);
  CHECK(c.extra["ops"]["allocs"].get<int>() + c.extra["ops"]["ooms"].get<int>() ==
        8 + 3 * 8 * 3);  // parameters + per iteration: activation, gradient, temporary per layer
  CHECK(c.find("alloc_latency") != nullptr);
}

TEST_CASE("policy counters are deterministic for a seed", "[bench][allocator]") {
  const auto text = allocator_doc(R"({"workload": "random", "count": 3000, "max_bytes": "4MiB",
                            "device_memory": "64MiB", "config": "max_split_size_mb:32"})");
  const auto a = run_allocator_text(text, 7);
  const auto b = run_allocator_text(text, 7);
  const auto& ca = a.scenarios.at(0).cases.at(0);
  const auto& cb = b.scenarios.at(0).cases.at(0);
  REQUIRE(ca.status == result::case_status::ok);
  REQUIRE(cb.status == result::case_status::ok);
  CHECK(ca.extra.at("memory_stats") == cb.extra.at("memory_stats"));
  CHECK(ca.extra.at("ops") == cb.extra.at("ops"));
  CHECK(ca.extra.at("memory_summary") == cb.extra.at("memory_summary"));
  for (const char* name : {"reserved_bytes.all.peak", "num_device_alloc", "num_ooms",
                           "fragmentation", "inactive_split_bytes.all.peak"})
    CHECK(counter(ca, name) == counter(cb, name));
  // Every sampled run is a fresh allocator: two runs, two medians.
  CHECK(ca.find("alloc_latency")->samples.size() == 2);
  CHECK(ca.extra.at("runs") == 2);
}

TEST_CASE("empty_cache_every calls empty_cache after every N-th iteration", "[bench][allocator]") {
  const auto r = run_allocator_text(allocator_doc(
      std::string(k_small_loop) + R"(, "iterations": 10})", R"({"empty_cache_every": [0, 1, 3]})"));
  const auto& never = find_case(r, "empty_cache_every=0");
  const auto& every = find_case(r, "empty_cache_every=1");
  const auto& third = find_case(r, "empty_cache_every=3");
  CHECK(never.extra.at("ops").at("empty_cache_calls") == 0);
  CHECK(every.extra.at("ops").at("empty_cache_calls") == 10);
  CHECK(third.extra.at("ops").at("empty_cache_calls") == 3);  // after iterations 3, 6 and 9
  CHECK(never.find("empty_cache_time") == nullptr);
  REQUIRE(third.find("empty_cache_time") != nullptr);
  CHECK(third.find("empty_cache_time")->samples.size() == 2 * 3);  // two runs
  CHECK(never.find("iteration_time")->samples.size() == 2 * 10);
  // Emptying the cache every step sends every step's blocks back to the device, and asks again.
  CHECK(counter(every, "num_device_alloc") > 5 * counter(never, "num_device_alloc"));
  CHECK(counter(every, "num_device_free") > 5 * counter(never, "num_device_free"));
}

TEST_CASE("raw asks the device for every allocation, caching for far fewer", "[bench][allocator]") {
  const auto r = run_allocator_text(
      allocator_doc(R"({"layers": 8, "activation_bytes": "8MiB", "parameter_bytes": "2MiB",
                                 "iterations": 10})",
                    R"({"allocator": ["caching", "raw"]})"));
  const auto& caching = find_case(r, "allocator=caching");
  const auto& raw = find_case(r, "allocator=raw");
  REQUIRE(caching.status == result::case_status::ok);
  REQUIRE(raw.status == result::case_status::ok);
  const double allocs = raw.extra.at("ops").at("allocs").get<double>();
  CHECK(allocs == 8 + 10 * 8 * 3);
  CHECK(counter(raw, "num_device_alloc") == allocs);
  CHECK(counter(raw, "num_device_free") == allocs);
  CHECK(counter(caching, "num_device_alloc") * 10 < allocs);
  CHECK(counter(raw, "fragmentation") < counter(caching, "fragmentation") + 1e-9);
}

TEST_CASE("allocator async is a case error on the host backend", "[bench][allocator]") {
  const auto r =
      run_allocator_text(allocator_doc(k_small_loop + std::string(R"(, "iterations": 6})"),
                                       R"({"allocator": ["async", "caching"]})"));
  const auto& async = find_case(r, "allocator=async");
  CHECK(async.status == result::case_status::error);
  CHECK(async.message.find("needs the cuda backend") != std::string::npos);
  CHECK(find_case(r, "allocator=caching").status == result::case_status::ok);  // the run goes on
}

TEST_CASE("config env reads PYTORCH_CUDA_ALLOC_CONF when the case runs", "[bench][allocator]") {
  const char* old = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
  const std::string saved = old == nullptr ? "" : old;
  const auto text =
      allocator_doc(std::string(k_small_loop) + R"(, "iterations": 6, "config": "env"})");

  ::setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64", 1);
  auto r = run_allocator_text(text);
  CHECK(r.scenarios.at(0).cases.at(0).status == result::case_status::ok);
  CHECK(r.scenarios.at(0).cases.at(0).extra.at("config") == "max_split_size_mb:64");

  ::setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:nope", 1);
  r = run_allocator_text(text);
  const auto& bad = r.scenarios.at(0).cases.at(0);
  CHECK(bad.status == result::case_status::error);
  CHECK(bad.message.find("PYTORCH_CUDA_ALLOC_CONF") != std::string::npos);

  if (old == nullptr)
    ::unsetenv("PYTORCH_CUDA_ALLOC_CONF");
  else
    ::setenv("PYTORCH_CUDA_ALLOC_CONF", saved.c_str(), 1);
}

TEST_CASE("a trace next to its scenario replays, unknown frees are skipped and counted",
          "[bench][allocator]") {
  const fs::path dir =
      fs::temp_directory_path() / ("pinbench-alloc-trace-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "t.json") << R"({"schema": "pinbench.trace/1", "events": [
      {"op": "alloc", "id": 1, "size": 4096, "stream": 0},
      {"op": "alloc", "id": 2, "size": 3145728, "stream": 0},
      {"op": "free", "id": 1},
      {"op": "free", "id": 42},
      {"op": "mark", "label": "iteration"},
      {"op": "empty_cache"},
      {"op": "free", "id": 2},
      {"op": "mark", "label": "iteration"}]})";
  std::ofstream(dir / "s.json") << allocator_doc(
      R"({"workload": "trace", "trace_file": "t.json"})");

  const auto r = run_scenario(scenario::load_scenario_file(dir / "s.json"));
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  CHECK(c.extra.at("ops") == json{{"allocs", 2},
                                  {"frees", 2},
                                  {"ooms", 0},
                                  {"skipped_frees", 1},
                                  {"skipped_allocs", 0},
                                  {"empty_cache_calls", 1},
                                  {"iterations", 2}});
  CHECK(counter(c, "allocated_bytes.all.peak") == 4096 + 3145728);
  CHECK(c.find("iteration_time")->samples.size() == 4);  // two per run
  CHECK_FALSE(c.warnings.empty());                       // the skipped free is reported
  fs::remove_all(dir);
}

TEST_CASE("with snapshots asked for, a case carries one taken at the end, with the whole trace",
          "[bench][allocator]") {
  const auto r = run_allocator_text(
      allocator_doc(std::string(k_small_loop) + R"(, "iterations": 6})"), 1, true);
  const auto& c = r.scenarios.at(0).cases.at(0);
  REQUIRE(c.status == result::case_status::ok);
  REQUIRE(c.snapshot.is_object());
  const auto& segments = c.snapshot.at("segments");
  REQUIRE_FALSE(segments.empty());
  std::uint64_t reserved = 0;
  for (const auto& seg : segments) {
    std::uint64_t covered = 0;
    for (const auto& b : seg.at("blocks")) {
      covered += b.at("size").get<std::uint64_t>();
      CHECK(b.at("state").is_string());
    }
    CHECK(covered == seg.at("total_size").get<std::uint64_t>());
    reserved += seg.at("total_size").get<std::uint64_t>();
  }
  // As _dump_snapshot() at the end of a program: what is reserved then; the map at the peak is
  // the result's segments_at_peak.
  CHECK(static_cast<double>(reserved) == counter(c, "reserved_bytes.all.current"));
  CHECK(static_cast<double>(c.extra.at("segments_at_peak").at("reserved_bytes").get<double>()) ==
        counter(c, "reserved_bytes.all.peak"));
  REQUIRE(c.snapshot.at("device_traces").size() == 1);
  const auto& trace = c.snapshot["device_traces"][0];
  REQUIRE_FALSE(trace.empty());
  CHECK(trace.front().at("action") == "segment_alloc");
  // Every allocation of the run is in it, from the first to the last.
  std::size_t allocs = 0;
  for (const auto& e : trace) allocs += e.at("action") == "alloc" ? 1 : 0;
  CHECK(static_cast<double>(allocs) == counter(c, "allocation.all.allocated"));
  CHECK(c.snapshot.at("allocator_settings").at("PYTORCH_CUDA_ALLOC_CONF") == "");

  // Not asked for: no snapshot.
  CHECK(run_allocator_text(allocator_doc(std::string(k_small_loop) + R"(, "iterations": 6})"))
            .scenarios.at(0)
            .cases.at(0)
            .snapshot.is_null());
}

TEST_CASE("the fragmentation scenario: the default config runs out of memory, another does not",
          "[bench][allocator]") {
  const auto s = scenario::load_scenario_file(fs::path(pinbench::testing::source_dir()) /
                                              "scenarios/allocator-fragmentation.json");
  const auto r =
      run_scenario(s, 1, false, {{"sampling.min_samples", "1"}, {"sampling.max_samples", "1"}});
  const auto& cases = r.scenarios.at(0).cases;
  REQUIRE(cases.size() >= 2);
  CHECK(cases.at(0).id == "config=\"\"");
  CHECK(counter(cases.at(0), "num_ooms") > 0);
  bool some_avoids = false;
  for (std::size_t i = 1; i < cases.size(); ++i)
    if (counter(cases[i], "num_ooms") == 0) some_avoids = true;
  CHECK(some_avoids);
}

TEST_CASE("latencies are timed in batches or per call, the policy is the same either way",
          "[bench][allocator][timing-method]") {
  const auto timed = [](const char* method) {
    return allocator_doc(
        fmt::format(R"({}, "iterations": 3, "timing": "{}"}})", k_small_loop, method));
  };
  const auto batched = run_allocator_text(timed("batch"));
  const auto per_call = run_allocator_text(timed("call"));
  const auto& b = batched.scenarios.at(0).cases.at(0);
  const auto& c = per_call.scenarios.at(0).cases.at(0);
  REQUIRE(b.status == result::case_status::ok);
  REQUIRE(c.status == result::case_status::ok);

  // Batched: one mean per run, no per-call distribution; per call: median and p99.
  CHECK(b.extra.at("timing").at("method") == "batch");
  CHECK(b.extra.at("timing").at("batch_calls") == 64);
  CHECK(b.find("alloc_latency_p99") == nullptr);
  REQUIRE(b.find("alloc_latency") != nullptr);
  CHECK(b.find("alloc_latency")->samples.size() == 2);
  CHECK(c.extra.at("timing").at("method") == "call");
  CHECK(c.find("alloc_latency_p99") != nullptr);
  CHECK(c.find("free_latency_p99") != nullptr);
  for (const auto* r : {&b, &c}) {
    // The cache-hit pair, batch-timed in both: one positive sample per run.
    const auto* hit = r->find("hit_pair_latency");
    REQUIRE(hit != nullptr);
    CHECK(hit->unit == "ns");
    REQUIRE(hit->samples.size() == 2);
    CHECK(hit->samples[0] > 0);
    CHECK(r->extra.at("timing").at("timer_read_ns").get<double>() > 0);
  }
  // Batching changes when the clock is read, not what the allocator does.
  for (const char* name : {"reserved_bytes.all.peak", "num_device_alloc", "num_alloc_retries",
                           "allocation.all.allocated", "fragmentation"})
    CHECK(counter(b, name) == counter(c, name));
  CHECK(b.extra.at("ops") == c.extra.at("ops"));

  // The timer's own cost, measured once at start-up, is in the environment with its samples.
  const auto& timer = batched.environment.at("timer");
  CHECK(timer.at("clock") == "steady_clock");
  CHECK(timer.at("read_ns").get<double>() > 0);
  CHECK(timer.at("samples").size() == 31);
}

TEST_CASE("out of memory inside a timed batch: counted, and the batch is not a latency sample",
          "[bench][allocator][timing-method]") {
  // 8 layers of 64 MiB in 256 MiB: allocs fail mid-batch. Same counts as per-call timing.
  const auto timed = [](const char* method) {
    return allocator_doc(fmt::format(R"({{"layers": 8, "activation_bytes": "64MiB", "iterations": 3,
                               "device_memory": "256MiB", "timing": "{}"}})",
                                     method));
  };
  const auto batched = run_allocator_text(timed("batch"));
  const auto per_call = run_allocator_text(timed("call"));
  const auto& b = batched.scenarios.at(0).cases.at(0);
  const auto& c = per_call.scenarios.at(0).cases.at(0);
  CHECK(counter(b, "num_ooms") > 0);
  CHECK(counter(b, "num_ooms") == counter(c, "num_ooms"));
  CHECK(b.extra.at("ops") == c.extra.at("ops"));
  CHECK(b.extra.at("first_oom") == c.extra.at("first_oom"));
}

TEST_CASE("the allocator info names the PyTorch release it follows, and the memory fraction",
          "[bench][allocator][pytorch]") {
  const auto unset =
      run_allocator_text(allocator_doc(fmt::format(R"({}, "iterations": 1}})", k_small_loop)));
  const auto given = run_allocator_text(
      allocator_doc(fmt::format(R"({}, "iterations": 1, "memory_fraction": 1.0}})", k_small_loop)));
  const auto& u = unset.scenarios.at(0).cases.at(0);
  const auto& g = given.scenarios.at(0).cases.at(0);
  CHECK(u.extra.at("pytorch").at("release") == "2.10");
  CHECK(u.extra.at("pytorch").at("release_from") == "the newest release modelled");
  CHECK(u.extra.at("pytorch").at("choices").size() >= 4);
  CHECK(u.extra.at("memory_fraction") == "unset");
  CHECK(g.extra.at("memory_fraction") == 1.0);
}
