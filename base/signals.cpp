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

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking waits return early and check the flag
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

bool interrupted() noexcept { return g_signal.load() != 0; }
int interrupt_signal() noexcept { return g_signal.load(); }

}  // namespace dt::signals
