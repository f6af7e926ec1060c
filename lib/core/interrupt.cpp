#include "core/interrupt.hpp"

#include <atomic>
#include <csignal>
#include <unistd.h>

#include "core/error.hpp"

namespace pinbench {

namespace {
std::atomic<int> g_interrupts{0};

extern "C" void on_sigint(int) {
  if (g_interrupts.fetch_add(1) >= 1) ::_exit(exit_interrupted);
}
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, nullptr);
}

bool interrupt_requested() noexcept { return g_interrupts.load(std::memory_order_relaxed) > 0; }
void request_interrupt() noexcept { g_interrupts.store(1); }
void clear_interrupt() noexcept { g_interrupts.store(0); }

void throw_if_interrupted() {
  if (interrupt_requested()) throw interrupted_error();
}

}  // namespace pinbench
