#include "core/interrupt.hpp"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <string_view>

#include "core/error.hpp"

namespace pinbench {

namespace {
// The first stop signal's number; 0 while none arrived. Only lock-free atomics in the handler.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// The first signal asks to stop. Only a second Ctrl-C ends the process at once: SIGTERM and
// SIGHUP often come twice on their own (`timeout` signals the process and then its group,
// Slurm every process of the step), and whoever wants it dead at once sends SIGKILL.
extern "C" void on_stop_signal(int signo) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, signo) && signo == SIGINT) ::_exit(128 + signo);
}
}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (const int signo : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal the process was started with ignored stays ignored: `nohup` (SIGHUP) and a
    // shell's background job (SIGINT) mean the run should not stop on it.
    struct sigaction old {};
    if (::sigaction(signo, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(signo, &sa, nullptr);
  }
}

bool interrupt_requested() noexcept {
  return g_signal.load(std::memory_order_relaxed) != 0;
}
int interrupt_signal() noexcept {
  return g_signal.load(std::memory_order_relaxed);
}

const char* interrupt_signal_name() noexcept {
  switch (interrupt_signal()) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "";
  }
}

int interrupted_exit_code() noexcept {
  const int signo = interrupt_signal();
  return 128 + (signo == 0 ? SIGINT : signo);
}

int interrupted_exit_code(std::string_view signal_name) noexcept {
  if (signal_name == "SIGTERM") return 128 + SIGTERM;
  if (signal_name == "SIGHUP") return 128 + SIGHUP;
  return 128 + SIGINT;
}

bool is_interrupted_exit_code(int code) noexcept {
  return code == 128 + SIGINT || code == 128 + SIGTERM || code == 128 + SIGHUP;
}

void request_interrupt(int signal) noexcept {
  g_signal.store(signal == 0 ? SIGINT : signal);
}
void clear_interrupt() noexcept {
  g_signal.store(0);
}

void throw_if_interrupted() {
  if (interrupt_requested()) throw interrupted_error();
}

}  // namespace pinbench
