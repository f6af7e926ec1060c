#include "core/clock.hpp"

#include <ctime>
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

std::string_view utc_timestamp(char (&buf)[32]) noexcept {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return {buf, n};
}

}  // namespace pinbench
