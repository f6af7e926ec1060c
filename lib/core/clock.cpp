#include "core/clock.hpp"

#include <algorithm>
#include <ctime>
#include <limits>
#include <string_view>
#include <thread>

namespace pinbench {

namespace {

timer_cost measure_timer_cost() {
  constexpr std::uint64_t reads = 1000;
  constexpr int batches = 31;
  timer_cost cost;
  cost.reads_per_batch = reads;
  std::int64_t step = std::numeric_limits<std::int64_t>::max();
  for (int b = 0; b < batches; ++b) {
    const std::int64_t t0 = now_ns();
    std::int64_t last = t0;
    for (std::uint64_t i = 0; i < reads; ++i) {
      const std::int64_t t = now_ns();
      if (t > last) step = std::min(step, t - last);
      last = t;
    }
    // `reads` reads inside, plus the closing one: the opening read is outside the interval.
    cost.samples.push_back(static_cast<double>(now_ns() - t0) / static_cast<double>(reads + 1));
  }
  std::vector<double> sorted = cost.samples;
  std::nth_element(sorted.begin(), sorted.begin() + batches / 2, sorted.end());
  cost.read_ns = sorted[batches / 2];
  cost.resolution_ns =
      step == std::numeric_limits<std::int64_t>::max() ? 0 : static_cast<double>(step);
  return cost;
}

}  // namespace

const timer_cost& timer_overhead() {
  static const timer_cost cost = measure_timer_cost();
  return cost;
}

void spin_for_ns(std::int64_t ns) noexcept {
  const std::int64_t end = now_ns() + ns;
  while (now_ns() < end) spin_pause();
}

void occupy_for_ns(std::int64_t ns) noexcept {
  constexpr std::int64_t spin_tail_ns = 200'000;
  const std::int64_t end = now_ns() + ns;
  if (ns > 2 * spin_tail_ns)
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(end - spin_tail_ns)));
  spin_for_ns(end - now_ns());
}

std::string_view utc_timestamp(char (&buf)[32]) noexcept {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {buf, n};
}

}  // namespace pinbench
