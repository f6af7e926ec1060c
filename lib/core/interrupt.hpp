// Stop requests: Ctrl-C (SIGINT), SIGTERM (timeout, Slurm's time limit, CI cancellation, a
// launcher's abort) and SIGHUP (a closed terminal) all ask running work to stop and keep what
// it measured.
#pragma once

#include <string_view>

namespace pinbench {

/// Installs one handler for SIGINT, SIGTERM and SIGHUP (those not ignored when the process
/// started: `nohup` keeps SIGHUP ignored) that records the first signal. A second
/// Ctrl-C ends the process at once (130); a repeated SIGTERM or SIGHUP does not (they often
/// come twice on their own).
void install_interrupt_handler();

/// True once a stop signal arrived (or request_interrupt() was called, in tests).
[[nodiscard]] bool interrupt_requested() noexcept;

/// The signal that asked to stop (SIGINT for request_interrupt()); 0 when none did.
[[nodiscard]] int interrupt_signal() noexcept;

/// "SIGINT", "SIGTERM" or "SIGHUP" for interrupt_signal(); "" when none arrived.
[[nodiscard]] const char* interrupt_signal_name() noexcept;

/// The exit code of a run that stopped on request: 128 + the signal (130 for Ctrl-C, 143 for
/// SIGTERM, 129 for SIGHUP), as a shell reports a process the signal ended.
[[nodiscard]] int interrupted_exit_code() noexcept;

/// The same for a signal's name as a result records it (interrupted_by: the signal may have
/// reached another rank); 130 for "" or an unknown name.
[[nodiscard]] int interrupted_exit_code(std::string_view signal_name) noexcept;

/// True for an exit code interrupted_exit_code() can return (a child that stopped on request).
[[nodiscard]] bool is_interrupted_exit_code(int code) noexcept;

/// Asks to stop as `signal` would (SIGINT when not given).
void request_interrupt(int signal = 0) noexcept;
void clear_interrupt() noexcept;

/// Throws interrupted_error when an interrupt was requested.
void throw_if_interrupted();

}  // namespace pinbench
