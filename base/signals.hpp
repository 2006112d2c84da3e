#pragma once
// Ctrl-C and SIGTERM: the first one sets a flag that every wait of the coordinator checks (it
// then stops the workers and exits 130); a second one exits at once (the workers die with the
// coordinator through PR_SET_PDEATHSIG).

namespace dt::signals {

void install_interrupt_handlers();
[[nodiscard]] bool interrupted() noexcept;
[[nodiscard]] int interrupt_signal() noexcept;  // the signal received, 0 if none

}  // namespace dt::signals
