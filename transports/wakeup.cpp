#include "transports/wakeup.hpp"

#include "base/error.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace dt::transport {

Wakeup::Wakeup() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) fail<TransportError>("cannot create an eventfd for a stop: {}", std::strerror(errno));
}

Wakeup::~Wakeup() { ::close(fd_); }

void Wakeup::raise() noexcept {
  // Never read back: the counter stays above zero, so the descriptor stays readable. A full
  // counter (EAGAIN after 2^64-2 raises) is readable too.
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(fd_, &one, sizeof one);
}

bool Wakeup::raised() const noexcept {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

}  // namespace dt::transport
