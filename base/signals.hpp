#pragma once
// Ctrl-C and SIGTERM: the first one sets a flag that every wait of the coordinator checks (it
// then stops the workers and exits 130); a second one exits at once (the workers die with the
// coordinator through PR_SET_PDEATHSIG).

namespace dt::signals {

void install_interrupt_handlers();
[[nodiscard]] bool interrupted() noexcept;
[[nodiscard]] int interrupt_signal() noexcept;  // the signal received, 0 if none

// A worker process of an elastic run (fault_tolerance.elastic): SIGTERM asks it to leave the
// run on purpose. The first one only sets the flag that the worker's waits check (it finishes
// its step first); a second one exits at once (143), so that a launcher stopping its workers
// is never held up.
void install_leave_handler();
[[nodiscard]] bool leave_requested() noexcept;

}  // namespace dt::signals
