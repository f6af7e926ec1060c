// The measurement protocol that every engine runs through: warm-up, the stop rule, Ctrl-C,
// verification, and metric handles that survive further declarations.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "measure/protocol.hpp"
#include "measure/sample_guard.hpp"

namespace pinbench::measure {
namespace {

sampling fixed(int warmup, int samples) {
  sampling s;
  s.warmup = warmup;
  s.min_samples = samples;
  s.max_samples = samples;
  s.min_time_ns = 0;
  return s;
}

struct interrupt_cleared {
  interrupt_cleared() { clear_interrupt(); }
  ~interrupt_cleared() { clear_interrupt(); }
};

}  // namespace

TEST_CASE("the protocol warms up, then samples until the rule stops", "[measure][protocol]") {
  result::case_result r;
  const auto m = declare(r, "value", "count", result::direction::higher);
  int warm = 0, taken = 0;
  measure_case(r, fixed(2, 5),
               {.warm_up = [&] { ++warm; },
                .sample = [&]() -> std::optional<double> {
                  m.add(++taken);
                  return 1.0;
                }});
  CHECK(warm == 2);
  CHECK(taken == 5);
  CHECK(r.stopped == result::stop_reason::max_samples);
  CHECK(r.status == result::case_status::ok);
  CHECK(r.find("value")->samples == std::vector<double>{1, 2, 3, 4, 5});
}

TEST_CASE("before_sampling runs once, between warm-up and the first sample",
          "[measure][protocol]") {
  result::case_result r;
  std::vector<char> order;
  measure_case(r, fixed(1, 2),
               {.warm_up = [&] { order.push_back('w'); },
                .before_sampling = [&] { order.push_back('b'); },
                .sample = [&]() -> std::optional<double> {
                  order.push_back('s');
                  return 1.0;
                }});
  CHECK(order == std::vector<char>{'w', 'b', 's', 's'});
}

TEST_CASE("metric handles stay valid while more metrics are declared", "[measure][protocol]") {
  result::case_result r;
  const auto first = declare(r, "first", "ns", result::direction::lower);
  for (int i = 0; i < 100; ++i)
    (void)declare(r, fmt::format("m{}", i), "ns", result::direction::lower);
  first.add(7);
  first.append({8, 9});
  REQUIRE(r.metrics.size() == 101);
  CHECK(r.metrics.front().samples == std::vector<double>{7, 8, 9});
  CHECK(declare(r, "first", "ns", result::direction::lower).get().samples.size() ==
        3);  // found, not added
}

TEST_CASE("Ctrl-C during sampling keeps the samples taken and marks the case interrupted",
          "[measure][protocol]") {
  const interrupt_cleared guard;
  result::case_result r;
  const auto m = declare(r, "value", "count", result::direction::higher);
  int taken = 0;
  measure_case(r, fixed(0, 100),
               {.warm_up = [] {},
                .sample = [&]() -> std::optional<double> {
                  m.add(1);
                  if (++taken == 3) request_interrupt();
                  return 1.0;
                }});
  CHECK(taken == 3);
  CHECK(r.stopped == result::stop_reason::interrupted);
  CHECK(r.status == result::case_status::interrupted);
  CHECK(r.find("value")->samples.size() == 3);
}

TEST_CASE("a sample cut short by Ctrl-C is not counted", "[measure][protocol]") {
  const interrupt_cleared guard;
  result::case_result r;
  int calls = 0;
  measure_case(r, fixed(0, 100),
               {.warm_up = [] {},
                .sample = [&]() -> std::optional<double> {
                  if (++calls < 3) return 1.0;
                  throw interrupted_error();
                }});
  CHECK(calls == 3);
  CHECK(r.stopped == result::stop_reason::interrupted);
}

TEST_CASE("Ctrl-C before any sample is an interrupted case with nothing measured",
          "[measure][protocol]") {
  const interrupt_cleared guard;
  result::case_result r;
  SECTION("during the warm-up") {
    CHECK_THROWS_AS(measure_case(r, fixed(3, 5),
                                 {.warm_up = [] { request_interrupt(); },
                                  .sample = []() -> std::optional<double> { return 1.0; }}),
                    interrupted_error);
  }
  SECTION("in the first sample") {
    CHECK_THROWS_AS(
        measure_case(r, fixed(0, 5),
                     {.warm_up = [] {}, .sample = []() -> std::optional<double> { return {}; }}),
        interrupted_error);
  }
}

TEST_CASE("an engine's failure propagates to the runner", "[measure][protocol]") {
  result::case_result r;
  CHECK_THROWS_WITH(measure_case(r, fixed(0, 5),
                                 {.warm_up = [] {},
                                  .sample = []() -> std::optional<double> {
                                    throw error("the device lost the data");
                                  }}),
                    "the device lost the data");
}

TEST_CASE("verification runs once after the samples and is recorded", "[measure][protocol]") {
  result::case_result r;
  std::vector<char> order;
  const auto loop = [&](std::string problem) {
    return sample_loop{.warm_up = [&] { order.push_back('w'); },
                       .sample = [&]() -> std::optional<double> {
                         order.push_back('s');
                         return 1.0;
                       },
                       .verify =
                           [&order, problem] {
                             order.push_back('v');
                             return problem;
                           }};
  };
  SECTION("intact: verified, the case ok") {
    measure_case(r, fixed(1, 2), loop(""));
    CHECK(order == std::vector<char>{'w', 's', 's', 'v'});
    CHECK(r.status == result::case_status::ok);
    CHECK(r.message.empty());
    CHECK(r.extra.at("verified") == true);
  }
  SECTION("a problem: not verified, the case an error that says what was wrong") {
    measure_case(r, fixed(0, 3), loop("h2d data did not arrive intact"));
    CHECK(order == std::vector<char>{'s', 's', 's', 'v'});
    CHECK(r.stopped == result::stop_reason::max_samples);
    CHECK(r.status == result::case_status::error);
    CHECK(r.message == "verification failed: h2d data did not arrive intact");
    CHECK(r.extra.at("verified") == false);
  }
}

TEST_CASE("without a verify function nothing is verified or recorded", "[measure][protocol]") {
  result::case_result r;
  measure_case(r, fixed(0, 2),
               {.warm_up = [] {}, .sample = []() -> std::optional<double> { return 1.0; }});
  CHECK(r.status == result::case_status::ok);
  CHECK_FALSE(r.extra.contains("verified"));
}

TEST_CASE("an interrupted case is not verified", "[measure][protocol]") {
  const interrupt_cleared guard;
  result::case_result r;
  int taken = 0;
  bool verified = false;
  measure_case(r, fixed(0, 100),
               {.warm_up = [] {},
                .sample = [&]() -> std::optional<double> {
                  if (++taken == 2) request_interrupt();
                  return 1.0;
                },
                .verify =
                    [&] {
                      verified = true;
                      return std::string("never seen");
                    }});
  CHECK_FALSE(verified);
  CHECK(r.status == result::case_status::interrupted);
  CHECK(r.message.empty());
  CHECK_FALSE(r.extra.contains("verified"));
}

TEST_CASE("a verification that throws propagates like a failed sample", "[measure][protocol]") {
  result::case_result r;
  CHECK_THROWS_WITH(
      measure_case(r, fixed(0, 1),
                   {.warm_up = [] {},
                    .sample = []() -> std::optional<double> { return 1.0; },
                    .verify = []() -> std::string { throw error("the read-back failed"); }}),
      "the read-back failed");
}

TEST_CASE("verify_case: the same step, for an engine that verifies after other work",
          "[measure][protocol]") {
  result::case_result r;
  SECTION("run and recorded when the case was not interrupted") {
    r.stopped = result::stop_reason::converged;
    verify_case(r, [] { return std::string("bad gradients"); });
    CHECK(r.status == result::case_status::error);
    CHECK(r.message == "verification failed: bad gradients");
    CHECK(r.extra.at("verified") == false);
  }
  SECTION("skipped when it was") {
    r.stopped = result::stop_reason::interrupted;
    r.status = result::case_status::interrupted;
    bool ran = false;
    verify_case(r, [&] {
      ran = true;
      return std::string();
    });
    CHECK_FALSE(ran);
    CHECK(r.status == result::case_status::interrupted);
    CHECK_FALSE(r.extra.contains("verified"));
  }
  SECTION("nothing to run: nothing recorded") {
    verify_case(r, nullptr);
    CHECK_FALSE(r.extra.contains("verified"));
  }
}

TEST_CASE("record_verification: what an engine verifying as it samples found",
          "[measure][protocol]") {
  result::case_result r;
  SECTION("intact and all checked") {
    record_verification(r, "");
    CHECK(r.extra.at("verified") == true);
    CHECK(r.status == result::case_status::ok);
  }
  SECTION("nothing wrong, but not all checked: not verified, not an error") {
    record_verification(r, "", /*all_checked=*/false);
    CHECK(r.extra.at("verified") == false);
    CHECK(r.status == result::case_status::ok);
    CHECK(r.message.empty());
  }
  SECTION("a problem fails the case") {
    record_verification(r, "sample 3 arrived twice");
    CHECK(r.extra.at("verified") == false);
    CHECK(r.status == result::case_status::error);
    CHECK(r.message == "verification failed: sample 3 arrived twice");
  }
  SECTION("a problem in an interrupted case is recorded, and the case stays interrupted") {
    r.stopped = result::stop_reason::interrupted;
    r.status = result::case_status::interrupted;
    record_verification(r, "sample 3 arrived twice");
    CHECK(r.extra.at("verified") == false);
    CHECK(r.status == result::case_status::interrupted);
    CHECK(r.message.empty());
  }
}

TEST_CASE("agree_to_stop hears every decision and is obeyed both ways", "[measure][protocol]") {
  SECTION("told to go on past its own rule: samples more, and the rule's own reason stays") {
    result::case_result r;
    std::vector<bool> heard;
    int taken = 0;
    measure_case(r, fixed(0, 3),
                 {.warm_up = [] {},
                  .sample = [&]() -> std::optional<double> {
                    ++taken;
                    return 1.0;
                  },
                  .agree_to_stop =
                      [&](bool stop) {
                        heard.push_back(stop);
                        return heard.size() == 5;
                      }});
    CHECK(taken == 5);
    CHECK(heard == std::vector<bool>{false, false, true, true, true});
    CHECK(r.stopped == result::stop_reason::max_samples);
  }
  SECTION("told to stop before its own rule is met") {
    result::case_result r;
    int taken = 0;
    measure_case(r, fixed(0, 10),
                 {.warm_up = [] {},
                  .sample = [&]() -> std::optional<double> {
                    ++taken;
                    return 1.0;
                  },
                  .agree_to_stop = [&](bool) { return taken == 2; }});
    CHECK(taken == 2);
    CHECK(r.stopped == result::stop_reason::converged);  // the other process's rule was met
    CHECK(r.status == result::case_status::ok);
  }
  SECTION("Ctrl-C stops this process whatever the answer, after telling the others") {
    const interrupt_cleared guard;
    result::case_result r;
    std::vector<bool> heard;
    int taken = 0;
    measure_case(r, fixed(0, 10),
                 {.warm_up = [] {},
                  .sample = [&]() -> std::optional<double> {
                    if (++taken == 2) request_interrupt();
                    return 1.0;
                  },
                  .agree_to_stop =
                      [&](bool stop) {
                        heard.push_back(stop);
                        return false;
                      }});
    CHECK(taken == 2);
    CHECK(heard == std::vector<bool>{false, true});
    CHECK(r.stopped == result::stop_reason::interrupted);
    CHECK(r.status == result::case_status::interrupted);
  }
}

}  // namespace pinbench::measure

namespace pinbench::measure {
namespace {

// Spoils the samples whose number (from 1) is listed.
struct listed_spoiler final : sample_guard {
  std::vector<int> spoiled_samples;
  int started = 0, discards = 0;
  void sample_starting() override { ++started; }
  std::string spoiled() override {
    for (int n : spoiled_samples)
      if (n == started) return "hw_thermal_slowdown";
    return {};
  }
  void discarded() override { ++discards; }
  void kept_spoiled() override { ++kept; }
  int kept = 0;
};

// A case of `samples` samples whose metric "value" records each sample's number (from 1), so
// that which ones were dropped shows.
result::case_result numbered_samples(int samples) {
  result::case_result r;
  const auto m = declare(r, "value", "count", result::direction::higher);
  int taken = 0;
  measure_case(r, fixed(0, samples),
               {.warm_up = [] {},
                .sample = [&]() -> std::optional<double> {
                  m.add(++taken);
                  return 1.0;
                }});
  return r;
}

}  // namespace

TEST_CASE("a spoiled sample is thrown away and taken again", "[measure][protocol][telemetry]") {
  listed_spoiler guard;
  guard.spoiled_samples = {2, 3};
  const scoped_sample_guard installed(guard);
  const auto r = numbered_samples(4);
  CHECK(guard.discards == 2);
  CHECK(r.find("value")->samples == std::vector<double>{1, 4, 5, 6});
  CHECK(r.warnings.empty());
}

TEST_CASE("a device spoiling every sample has them kept, the guard told, after min_samples retakes",
          "[measure][protocol][telemetry]") {
  listed_spoiler guard;
  for (int n = 1; n <= 100; ++n) guard.spoiled_samples.push_back(n);
  const scoped_sample_guard installed(guard);
  const auto r = numbered_samples(3);
  CHECK(guard.discards == 3);
  CHECK(guard.kept == 3);
  CHECK(r.find("value")->samples == std::vector<double>{4, 5, 6});
  CHECK(r.warnings.empty());  // the guard's owner words it (run/case_telemetry)
}

TEST_CASE("without a guard installed every sample is kept", "[measure][protocol][telemetry]") {
  REQUIRE(current_sample_guard() == nullptr);
  const auto r = numbered_samples(4);
  CHECK(r.find("value")->samples == std::vector<double>{1, 2, 3, 4});
  CHECK(r.warnings.empty());
}

}  // namespace pinbench::measure
