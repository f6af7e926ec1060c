// Kind `collective`: its engine over emulated host devices (the host ring), over the ranks of a
// launch (threads of one process here), its params' rules, and the built-in scenario through the
// built binary.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "collective/collective.hpp"
#include "collective/thread_world.hpp"
#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/platform.hpp"
#include "kinds/collective/collective_params.hpp"
#include "kinds/registry.hpp"

namespace pinbench {
namespace {

measure::sampling quick_sampling() {
  measure::sampling s;
  s.warmup = 1;
  s.min_samples = 2;
  s.max_samples = 3;
  s.max_noise = 1;
  s.min_time_ns = 0;
  s.timeout_ns = 2'000'000'000;
  return s;
}

// A case of the kind with its defaults, `overrides` applied, parsed by the kind.
measure::case_spec make_case(const nlohmann::json& overrides) {
  const auto* k = kinds::find("collective");
  REQUIRE(k != nullptr);
  nlohmann::json params;
  for (const auto& p : k->params) params[p.name] = p.default_value;
  params.update(overrides);
  measure::case_spec c;
  c.id = params.dump();
  c.params = params;
  c.typed = k->parse_case(params, "test.json");
  c.sampling = quick_sampling();
  return c;
}

// Runs one case on `devices` emulated host devices, as the runner would.
result::case_result run_local(const measure::case_spec& c, int devices) {
  auto dev = device::platform::host().open(0);
  auto engine = kinds::find("collective")->make_engine();
  const auto platform = device::platform::host({}, devices);
  measure::run_context ctx{.dev = *dev};
  ctx.platform = &platform;
  return engine->run_case(c, ctx);
}

void check_measured(const result::case_result& r, int ranks, double factor) {
  INFO(r.message);
  CHECK(r.status == result::case_status::ok);
  CHECK(r.extra.at("verified") == true);
  CHECK(r.extra.at("ranks") == ranks);
  CHECK(r.extra.at("bus_factor").get<double>() == Approx(factor));
  const auto* algbw = r.find("algbw");
  const auto* busbw = r.find("busbw");
  const auto* time = r.find("time");
  REQUIRE(algbw != nullptr);
  REQUIRE(time != nullptr);
  REQUIRE(algbw->samples.size() >= 2);
  // The ring's threads run a sample's collectives back to back and wait once; the launch's
  // communicator completes each call before the next.
  const bool communicator =
      r.extra.at("group").get<std::string>().find("communicator") != std::string::npos;
  CHECK_THAT(r.extra.at("timing").get<std::string>(),
             Catch::Contains(communicator ? "each completed" : "one wait"));
  // One rank: no busbw at all (not 0), and the case says why.
  if (ranks == 1) {
    CHECK(busbw == nullptr);
    CHECK(r.extra.at("busbw_reason").get<std::string>().find("one rank") != std::string::npos);
  } else {
    CHECK_FALSE(r.extra.contains("busbw_reason"));
    REQUIRE(busbw != nullptr);
    REQUIRE(busbw->samples.size() == algbw->samples.size());
  }
  CHECK(time->unit == "ns");
  CHECK(algbw->unit == "GB/s");
  const double bytes = r.extra.at("shape").at("bytes").get<double>();
  for (std::size_t i = 0; i < algbw->samples.size(); ++i) {
    CHECK(algbw->samples[i] > 0);
    CHECK(algbw->samples[i] == Approx(bytes / time->samples[i]));
    if (busbw != nullptr) CHECK(busbw->samples[i] == Approx(algbw->samples[i] * factor));
  }
}

}  // namespace

TEST_CASE("the collective kind measures and verifies every op over emulated devices",
          "[collective][kinds]") {
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"})
    for (const bool in_place : {false, true}) {
      INFO(op << " in_place " << in_place);
      // An awkward size: not a multiple of the ranks' blocks.
      const auto c = make_case({{"op", op},
                                {"bytes", 4096 + 12},
                                {"in_place", in_place},
                                {"root", 2},
                                {"dtype", in_place ? "int32" : "float64"}});
      const auto r = run_local(c, 4);
      const auto o = *collective::op_from(op);
      check_measured(r, 4, collective::bus_factor(o, 4));
      CHECK(r.extra.at("group") == "host ring, 4 threads");
      const auto t = in_place ? collective::dtype::int32 : collective::dtype::float64;
      CHECK(r.extra.at("shape").at("bytes") == collective::shape_of(o, t, 4096 + 12, 4).bytes(t));
    }
}

TEST_CASE("a collective names no link ceiling, and its group says why and how it was timed",
          "[collective][kinds]") {
  const auto r = run_local(make_case({{"op", "all_reduce"}, {"bytes", 4096}}), 2);
  CHECK(r.extra.at("link_ceiling") ==
        nlohmann::json{{"gbps", nullptr},
                       {"reason", "the host ring copies through host memory: no device link"}});
  CHECK(r.find("link_fraction") == nullptr);
  CHECK_THAT(r.extra.at("timing").get<std::string>(),
             Catch::EndsWith("run back to back by the ring's threads and one wait for "
                             "completion (nccl-tests' method)"));
}

TEST_CASE("the collective kind's op and dtype tables name values as collective::to_string does",
          "[collective][kinds][choice]") {
  std::size_t ops = 0, dtypes = 0;
  for (const auto& [name, o] : kinds::collective::op_choice.table()) {
    CHECK(collective::to_string(o) == name);
    CHECK(collective::op_from(name) == o);
    ++ops;
  }
  for (const auto& [name, t] : kinds::collective::dtype_choice.table()) {
    CHECK(collective::to_string(t) == name);
    CHECK(collective::dtype_from(name) == t);
    ++dtypes;
  }
  CHECK(ops == 5);
  CHECK(dtypes == 3);
}

TEST_CASE("the collective kind takes as many devices as ranks asks for", "[collective][kinds]") {
  SECTION("fewer than there are") {
    check_measured(run_local(make_case({{"ranks", 3}, {"bytes", 1000}}), 4), 3, 2.0 * 2 / 3);
  }
  SECTION("one, asked for: no busbw, with the reason") {
    check_measured(run_local(make_case({{"ranks", 1}, {"bytes", 1000}}), 4), 1, 0);
  }
  SECTION("one, when the process can open no other device") {
    auto dev = device::platform::host().open(0);
    auto engine = kinds::find("collective")->make_engine();
    measure::run_context ctx{.dev = *dev};  // and no platform to open others from
    check_measured(engine->run_case(make_case({{"bytes", 1000}}), ctx), 1, 0);
  }
  SECTION("more than there are: skipped, saying how many") {
    try {
      (void)run_local(make_case({{"ranks", 5}, {"bytes", 1000}}), 4);
      FAIL("no unsupported_error");
    } catch (const unsupported_error& e) {
      CHECK(std::string(e.what()) == "needs 5 devices, this process sees 4");
    }
  }
}

TEST_CASE("the collective kind's params refuse what cannot run", "[collective][kinds]") {
  CHECK_THROWS_AS(make_case({{"bytes", 2}}), input_error);  // not one float32
  CHECK_THROWS_WITH(make_case({{"op", "broadcast"}, {"ranks", 4}, {"root", 4}}),
                    Catch::Contains("params.root"));
  CHECK_NOTHROW(make_case({{"op", "all_reduce"}, {"ranks", 4}, {"root", 4}}));  // root unused
  // Fewer bytes than one element per rank: known only once the ranks are.
  CHECK_THROWS_WITH(run_local(make_case({{"op", "all_gather"}, {"bytes", 8}}), 4),
                    Catch::Contains("raise bytes"));
  CHECK_THROWS_WITH(run_local(make_case({{"op", "broadcast"}, {"root", 3}}), 2),
                    Catch::Contains("root=3"));
}

TEST_CASE("under a launch every rank takes the same samples and checks every rank's values",
          "[collective][kinds][world]") {
  constexpr int n = 3;
  auto c = make_case({{"op", "all_reduce"}, {"bytes", 1 << 16}});
  // A rule that never converges and ends by timeout: each rank alone would stop after its own
  // number of samples, and the others would wait in a collective it left.
  c.sampling.max_samples = 1'000'000;  // the timeout, not the count, ends it
  c.sampling.max_noise = 0;
  // Long enough for two samples on a loaded machine (40 ms once gave one on a busy CI host).
  c.sampling.timeout_ns = 400'000'000;
  testing::thread_world world(n);
  std::vector<result::case_result> results(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      testing::thread_world::comm comm(world, r);
      auto dev = device::platform::host().open(0);
      auto engine = kinds::find("collective")->make_engine();
      measure::run_context ctx{.dev = *dev};
      ctx.world = &comm;
      try {
        results[static_cast<std::size_t>(r)] = engine->run_case(c, ctx);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    const auto& res = results[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << errors[static_cast<std::size_t>(r)]);
    REQUIRE(errors[static_cast<std::size_t>(r)].empty());
    check_measured(res, n, 2.0 * (n - 1) / n);
    CHECK(res.extra.at("group") == "threads communicator over host memory, 3 processes");
    CHECK(res.find("time")->samples.size() == results[0].find("time")->samples.size());
    CHECK(res.extra.at("iterations") == results[0].extra.at("iterations"));
  }
  CHECK(results[0].stopped == result::stop_reason::timeout);
}

TEST_CASE("under a launch, ranks must be 0 or the number of processes",
          "[collective][kinds][world]") {
  testing::thread_world world(2);
  testing::thread_world::comm comm(world, 0);  // no collective is reached: one rank suffices
  auto dev = device::platform::host().open(0);
  auto engine = kinds::find("collective")->make_engine();
  measure::run_context ctx{.dev = *dev};
  ctx.world = &comm;
  CHECK_THROWS_WITH(engine->run_case(make_case({{"ranks", 4}}), ctx),
                    Catch::Contains("ranks=4 but this launch has 2 processes"));
}

TEST_CASE("pinbench run builtin:collective-all-reduce on the host backend", "[collective][cli]") {
  const auto dir = testing::fresh_dir("collective-cli");
  const auto out = (dir / "r.json").string();
  const auto o = testing::run_pinbench(
      "run builtin:collective-all-reduce --backend host --quiet --set sampling.min_time=0"
      " --set sampling.warmup=1 --set sampling.timeout=200ms --out " +
      out);
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& s = j["scenarios"][0];
  CHECK(s["kind"] == "collective");
  REQUIRE(s["cases"].size() == 3);
  for (const auto& c : s["cases"]) {
    CHECK(c["status"] == "ok");
    CHECK(c["info"]["verified"] == true);  // the case's extra facts, as the result file names them
    CHECK(c["metrics"]["algbw"]["unit"] == "GB/s");
    CHECK(c["metrics"]["busbw"]["samples"].size() >= 1);
    CHECK(c["metrics"]["time"]["samples"].size() == c["metrics"]["busbw"]["samples"].size());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace pinbench

namespace pinbench {

TEST_CASE("one rank: no busbw in the result, and compare and report go without it",
          "[collective][cli]") {
  const auto dir = testing::fresh_dir("collective-one-rank");
  const auto out = (dir / "r.json").string();
  const auto o = testing::run_pinbench(
      "run builtin:collective-all-reduce --backend host --set ranks=1 --set sampling.min_time=0"
      " --set sampling.warmup=1 --set sampling.timeout=200ms --out " +
      out);
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  for (const auto& c : j["scenarios"][0]["cases"]) {
    CHECK(c["status"] == "ok");
    CHECK(c["metrics"].contains("algbw"));
    CHECK_FALSE(c["metrics"].contains("busbw"));
    CHECK(c["info"]["busbw_reason"].get<std::string>().find("one rank") != std::string::npos);
  }
  // The scenario gates busbw: absent on both sides, it is no row and no failure.
  const auto same = testing::run_pinbench("compare " + out + " " + out + " --format json");
  INFO(same.err);
  CHECK(same.code == 0);
  CHECK(same.out.find("\"busbw\"") == std::string::npos);
  const auto html = testing::run_pinbench("report " + out + " --html " + (dir / "r.html").string());
  INFO(html.err);
  CHECK(html.code == 0);
  std::filesystem::remove_all(dir);
}

}  // namespace pinbench
