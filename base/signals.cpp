#include "base/signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace dt::signals {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_interrupt(int sig) {
  if (g_signal.exchange(sig) != 0) ::_exit(130);
}

std::atomic<bool> g_leave{false};

extern "C" void on_leave(int) {
  if (g_leave.exchange(true)) ::_exit(128 + SIGTERM);
}

void set_handler(int sig, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking waits return early and check the flag
  ::sigaction(sig, &action, nullptr);
}

}  // namespace

void install_leave_handler() { set_handler(SIGTERM, on_leave); }

bool leave_requested() noexcept { return g_leave.load(); }

void install_interrupt_handlers() {
  set_handler(SIGINT, on_interrupt);
  set_handler(SIGTERM, on_interrupt);
  ::signal(SIGPIPE, SIG_IGN);
}

bool interrupted() noexcept { return g_signal.load() != 0; }
int interrupt_signal() noexcept { return g_signal.load(); }

}  // namespace dt::signals
