// One steady clock for every host-side time pinbench measures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pinbench {

/// Nanoseconds on the steady clock (monotonic; unrelated to wall time).
[[nodiscard]] inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// What one now_ns() read costs on this host. A cache-hit allocation costs a few tens of
/// nanoseconds, about what two reads cost, so a per-call figure is only honest next to this.
struct timer_cost {
  double read_ns = 0;        ///< median over batches of (batch time / reads) for back-to-back reads
  double resolution_ns = 0;  ///< the smallest nonzero step seen between consecutive reads
  std::uint64_t reads_per_batch = 0;
  std::vector<double> samples;  ///< each batch's ns per read, in the order measured
};

/// Measured once, on the first call (the runner calls it at start-up, before the first case).
[[nodiscard]] const timer_cost& timer_overhead();

/// One step of a spin-wait: tells the CPU this thread is spinning (x86 `pause`), which spares
/// the sibling hyper-thread and the memory bus.
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins (no sleep) until `ns` nanoseconds have passed: real CPU work of a known duration.
void spin_for_ns(std::int64_t ns) noexcept;

/// Returns after `ns` nanoseconds, sleeping through all but the last ~200 us and spinning the
/// rest: precise to a few microseconds without holding a core for the whole duration.
void occupy_for_ns(std::int64_t ns) noexcept;

/// The current UTC time as "2026-11-30T20:00:00Z".
[[nodiscard]] std::string_view utc_timestamp(char (&buf)[32]) noexcept;

}  // namespace pinbench
