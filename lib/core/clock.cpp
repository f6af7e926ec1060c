#include "core/clock.hpp"

#include <ctime>
#include <thread>
#include <string_view>

namespace pinbench {

void spin_for_ns(std::int64_t ns) noexcept {
  const std::int64_t end = now_ns() + ns;
  while (now_ns() < end) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void occupy_for_ns(std::int64_t ns) noexcept {
  constexpr std::int64_t spin_tail_ns = 200'000;
  const std::int64_t end = now_ns() + ns;
  if (ns > 2 * spin_tail_ns)
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(end - spin_tail_ns)));
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
