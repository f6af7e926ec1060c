// Generated workloads: deterministic per seed, every allocation freed exactly once, the training
// loop's shape exactly as specified, RMM's random pattern never freeing what is not live.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "alloc/workload.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

using namespace pinbench;
using namespace pinbench::alloc;

namespace {

std::vector<event> drain(event_source& source) {
  std::vector<event> out;
  event e;
  while (source.next(e)) out.push_back(e);
  return out;
}

bool same_events(const std::vector<event>& a, const std::vector<event>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].op != b[i].op || a[i].id != b[i].id || a[i].size != b[i].size ||
        a[i].stream != b[i].stream || a[i].label != b[i].label) {
      return false;
    }
  }
  return true;
}

// Checks that ids are unique, each alloc is freed exactly once after it, and nothing else is
// freed; returns the number of allocations.
std::size_t check_balanced(const std::vector<event>& events) {
  std::set<std::uint64_t> live, seen;
  for (const auto& e : events) {
    if (e.op == event::kind::alloc) {
      CHECK(e.size > 0);
      CHECK(seen.insert(e.id).second);
      live.insert(e.id);
    } else if (e.op == event::kind::free) {
      CHECK(live.erase(e.id) == 1);
    }
  }
  CHECK(live.empty());
  return seen.size();
}

std::size_t count(const std::vector<event>& events, event::kind op) {
  return static_cast<std::size_t>(
      std::count_if(events.begin(), events.end(), [&](const event& e) { return e.op == op; }));
}

training_loop_spec small_loop() {
  training_loop_spec s;
  s.layers = 3;
  s.iterations = 2;
  s.activation_bytes = 10_MiB;
  s.parameter_bytes = 1_MiB;
  s.base_batch = 8;
  s.seed = 7;
  return s;
}

}  // namespace

TEST_CASE("training_loop: the event sequence of a small spec, derived by hand",
          "[alloc][workload]") {
  const auto events = drain(*make_training_loop(small_loop()));
  // 3 parameters; per iteration 3 activations, 3 x (gradient, free activation), 3 temporaries,
  // 3 + 3 frees, 1 mark = 19; 3 parameter frees at the end: 3 + 2 x 19 + 3 = 44.
  REQUIRE(events.size() == 44);
  CHECK(count(events, event::kind::alloc) == 3 + 2 * 9);
  CHECK(count(events, event::kind::free) == 3 + 2 * 9);
  CHECK(count(events, event::kind::mark) == 2);
  CHECK(count(events, event::kind::empty_cache) == 0);
  CHECK(check_balanced(events) == 21);

  using k = event::kind;
  const std::vector<k> expected_ops = {
      k::alloc, k::alloc, k::alloc,                              // parameters
      k::alloc, k::alloc, k::alloc,                              // forward
      k::alloc, k::free,  k::alloc, k::free, k::alloc, k::free,  // backward
      k::alloc, k::alloc, k::alloc,                              // optimizer temporaries
      k::free,  k::free,  k::free,  k::free, k::free,  k::free,  // temporaries, gradients
      k::mark};
  for (std::size_t i = 0; i < expected_ops.size(); ++i) {
    INFO("event " << i);
    CHECK(events[i].op == expected_ops[i]);
  }
  // Parameters get ids 1..3 and stay until the very end.
  for (std::size_t l = 0; l < 3; ++l) {
    CHECK(events[l].id == l + 1);
    CHECK(events[44 - 3 + l].op == k::free);
    CHECK(events[44 - 3 + l].id == l + 1);
    CHECK(events[l].size >= 1_MiB - 1_MiB / 10);
    CHECK(events[l].size <= 1_MiB + 1_MiB / 10);
  }
  // Activations 4..6 (layer order); backward: gradient of layer 2 (id 7), then activation 6 freed.
  CHECK(events[3].id == 4);
  CHECK(events[6].id == 7);
  CHECK(events[6].size == events[2].size);  // a gradient has its parameter's size
  CHECK(events[7].id == 6);
  CHECK(events[11].id == 4);  // the first layer's activation goes last
  CHECK(events[21].label == "iteration");
  for (std::size_t i = 3; i < 6; ++i) {
    CHECK(events[i].size >= 9_MiB);
    CHECK(events[i].size <= 11_MiB + 1);
  }
  for (const auto& e : events) CHECK(e.stream == 0);
}

TEST_CASE("training_loop: same seed, same events, another seed, other sizes", "[alloc][workload]") {
  auto spec = small_loop();
  const auto a = drain(*make_training_loop(spec));
  const auto b = drain(*make_training_loop(spec));
  CHECK(same_events(a, b));
  spec.seed = 8;
  const auto c = drain(*make_training_loop(spec));
  REQUIRE(c.size() == a.size());
  CHECK_FALSE(same_events(a, c));
}

TEST_CASE("training_loop: batch sizes cycle and scale the activations", "[alloc][workload]") {
  auto spec = small_loop();
  spec.layers = 1;
  spec.iterations = 4;
  spec.batch_sizes = {8, 32};  // base_batch 8: activations of 10 MiB, then 40 MiB (+-10%)
  const auto events = drain(*make_training_loop(spec));
  check_balanced(events);
  // One layer: parameter, then per iteration 7 events; the activation is the first of each.
  std::vector<std::uint64_t> activation_sizes;
  for (std::size_t i = 1; i + 1 < events.size(); i += 7) activation_sizes.push_back(events[i].size);
  REQUIRE(activation_sizes.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const std::uint64_t base = i % 2 == 0 ? 10_MiB : 40_MiB;
    INFO("iteration " << i);
    CHECK(activation_sizes[i] >= base - base / 10);
    CHECK(activation_sizes[i] <= base + base / 10);
  }
  // Tiny activations are raised to 512 bytes.
  spec.activation_bytes = 100;
  spec.batch_sizes = {1};
  const auto tiny = drain(*make_training_loop(spec));
  CHECK(tiny[1].size == 512);
}

TEST_CASE("training_loop: streamed, so a long run needs no memory up front", "[alloc][workload]") {
  training_loop_spec spec;  // defaults: 24 layers
  spec.iterations = 2000;
  auto source = make_training_loop(spec);
  event e;
  std::uint64_t n = 0;
  while (source->next(e)) ++n;
  CHECK(n == 2 * 24 + 2000ull * (6 * 24 + 1));
}

TEST_CASE("training_loop: a bad spec is an input error", "[alloc][workload]") {
  auto spec = small_loop();
  spec.layers = 0;
  CHECK_THROWS_WITH(make_training_loop(spec), "training_loop: layers must be at least 1, got 0");
  spec = small_loop();
  spec.batch_sizes = {4, 0};
  CHECK_THROWS_AS(make_training_loop(spec), input_error);
  spec = small_loop();
  spec.base_batch = 0;
  CHECK_THROWS_AS(make_training_loop(spec), input_error);
}

TEST_CASE("random: RMM's pattern, balanced and never freeing what is not live",
          "[alloc][workload]") {
  random_spec spec;
  spec.count = 5000;
  spec.max_bytes = 1_MiB;
  spec.alloc_probability = 0.6;
  spec.mark_every = 1000;
  spec.seed = 42;
  const auto events = drain(*make_random(spec));
  const std::size_t allocs = check_balanced(events);
  CHECK(count(events, event::kind::mark) == 5);
  // count operations, then one free per allocation still live at the end.
  CHECK(count(events, event::kind::alloc) + count(events, event::kind::free) ==
        spec.count + (allocs - (spec.count - allocs)));
  // Roughly 60% allocations (a free when nothing is live counts as an allocation).
  CHECK(allocs > 2500);
  CHECK(allocs < 3500);
  std::uint64_t min_size = UINT64_MAX, max_size = 0;
  for (const auto& e : events) {
    if (e.op != event::kind::alloc) continue;
    min_size = std::min(min_size, e.size);
    max_size = std::max(max_size, e.size);
  }
  CHECK(min_size >= 1);
  CHECK(max_size <= 1_MiB);
  CHECK(max_size > 1_MiB / 2);  // the sizes spread over the range
  // Marks come after every 1000 operations.
  std::size_t ops = 0;
  for (const auto& e : events) {
    if (e.op == event::kind::mark) {
      CHECK(ops % 1000 == 0);
    } else if (ops < spec.count) {
      ++ops;
    }
  }
}

TEST_CASE("random: deterministic for a seed", "[alloc][workload]") {
  random_spec spec;
  spec.count = 2000;
  const auto a = drain(*make_random(spec));
  CHECK(same_events(a, drain(*make_random(spec))));
  spec.seed = 2;
  CHECK_FALSE(same_events(a, drain(*make_random(spec))));
}

TEST_CASE("random: edge probabilities", "[alloc][workload]") {
  random_spec spec;
  spec.count = 100;
  spec.mark_every = 0;
  spec.alloc_probability = 1.0;
  auto events = drain(*make_random(spec));
  CHECK(count(events, event::kind::alloc) == 100);
  CHECK(count(events, event::kind::mark) == 0);
  check_balanced(events);
  // Never allocating by choice: alternate alloc (nothing live) and free.
  spec.alloc_probability = 0.0;
  events = drain(*make_random(spec));
  CHECK(count(events, event::kind::alloc) == 50);
  check_balanced(events);
  spec.alloc_probability = 1.5;
  CHECK_THROWS_AS(make_random(spec), input_error);
  spec.alloc_probability = 0.5;
  spec.max_bytes = 0;
  CHECK_THROWS_AS(make_random(spec), input_error);
}
