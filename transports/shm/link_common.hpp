#pragma once
// What the shared-memory Listener and Connection share: control messages, size checks, counters
// and the one wait (ppoll over the ZeroMQ socket's fd, a bell and pidfds). Internal to
// transports/shm/.

#include "base/error.hpp"
#include "transports/shm/region.hpp"
#include "transports/transport.hpp"

#include <poll.h>

#include <chrono>
#include <string>
#include <vector>

namespace dt::transport::shm::detail {

inline constexpr std::size_t kMaxFrames = 65536;

// One beat of a spin-wait: tells the core (and a hyperthread sibling) that this is a wait.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

[[nodiscard]] inline wire::Message control(std::uint16_t type, std::uint64_t job_id,
                                           std::vector<std::string> texts = {}) {
  wire::Message m;
  m.header.type = type;
  m.header.job_id = job_id;
  m.header.rank = wire::kCoordinatorRank;
  for (const auto& t : texts) m.payload.push_back(wire::to_bytes(std::string_view(t)));
  return m;
}

[[nodiscard]] inline std::uint64_t wire_bytes(const wire::Message& m) {
  return wire::kHeaderSize + wire::payload_total(m);
}

// The payload's size, after the checks the ZeroMQ side makes on a send.
[[nodiscard]] inline std::uint64_t checked_payload(const wire::Message& m, std::uint64_t max_payload,
                                                   const std::string& who) {
  const std::uint64_t total = wire::payload_total(m);
  if (total > max_payload) {
    fail<ProtocolError>("send to {}: payload of {} bytes exceeds the limit of {} bytes", who,
                        total, max_payload);
  }
  if (m.payload.size() > kMaxFrames) {
    fail<ProtocolError>("send to {}: {} payload frames, at most {} are allowed", who,
                        m.payload.size(), kMaxFrames);
  }
  return total;
}

// Counters of the wrapped ZeroMQ socket, less the control messages, plus the rings' traffic.
struct Tally {
  Counters own;      // ring traffic
  Counters control;  // control messages through ZeroMQ (taken out again)
  Counters shown;

  const Counters& combine(const Counters& inner) {
    shown.bytes_sent = inner.bytes_sent - control.bytes_sent + own.bytes_sent;
    shown.bytes_received = inner.bytes_received - control.bytes_received + own.bytes_received;
    shown.messages_sent = inner.messages_sent - control.messages_sent + own.messages_sent;
    shown.messages_received =
        inner.messages_received - control.messages_received + own.messages_received;
    shown.messages_dropped = inner.messages_dropped + own.messages_dropped;
    return shown;
  }
};

enum class WaitResult { kWoken, kInterrupted };

// Sleeps until one of `fds` is readable or the deadline passes; EINTR -> kInterrupted.
[[nodiscard]] inline WaitResult wait_fds(std::vector<pollfd>& fds, Deadline deadline) {
  const auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  for (auto& fd : fds) fd.revents = 0;
  const int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (n < 0 && errno == EINTR) return WaitResult::kInterrupted;
  return WaitResult::kWoken;
}

[[nodiscard]] inline bool valid_file_name(const std::string& name) {
  return !name.empty() && name.size() < 100 && name.find('/') == std::string::npos &&
         name != "." && name != "..";
}

}  // namespace dt::transport::shm::detail
