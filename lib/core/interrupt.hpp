// Ctrl-C handling: the first SIGINT asks running work to stop and keep what it measured.
#pragma once

namespace pinbench {

/// Installs a SIGINT handler that sets the flag below. A second SIGINT exits at once (130).
void install_interrupt_handler();

/// True once SIGINT arrived (or request_interrupt() was called, in tests).
[[nodiscard]] bool interrupt_requested() noexcept;

void request_interrupt() noexcept;
void clear_interrupt() noexcept;

/// Throws interrupted_error when an interrupt was requested.
void throw_if_interrupted();

}  // namespace pinbench
