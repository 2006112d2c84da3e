#pragma once
// Fault injection, a TESTING feature (config `faults:`, `disttrain run --fault`), as rabit's
// "mock" engine and ps-lite's drop rate let CI exercise recovery: each worker builds a
// FaultInjector from the faults aimed at its rank and calls it at the start of every step
// (WorkerSession::begin_step) and before every message it sends (WorkerSession::send, and
// ServerClient::push for delays).
//
//   kill   raise(SIGKILL) on itself: the coordinator sees the exit status.
//   hang   raise(SIGSTOP) on itself: alive to waitpid, silent on the network (heartbeats stop).
//   slow   sleeps `ms` at the start of the step; counted in the step's compute time.
//   drop   the message is not sent (its reply is still cached for a repeated request).
//   delay  sleeps `ms` before the message is sent.
//   leave  raise(SIGTERM) on itself: with fault_tolerance.elastic, a planned leave (the worker
//          finishes the step, tells the coordinator and exits 0; docs/elastic.md).
//
// When: `at_step` fires kill, hang and leave once, at that step, and slow, drop and delay at every step
// from then on (drop and delay: every message of those steps). `probability` draws per step
// (kill, hang, slow) or per message (drop, delay) from the counter-based generator keyed by
// (fault seed, rank, fault index, step, message index): a run's faults are the same on every
// run. Only messages sent during a step are touched (not start-up, evaluation or the report).
//
// Steps are the worker's own: the global step in gradients mode (star, ring, tensor, sharded),
// the local step counter in parameters and async modes.

#include "core/config/config.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace dt::roles {

// What fires at one step or on one message: pure functions of the faults, rank, step and
// message index (the side effects are FaultInjector's).
struct StepFaults {
  bool kill = false;
  bool hang = false;
  bool leave = false;
  int slow_ms = 0;  // summed over the slow faults that fire
};
struct MessageFaults {
  bool drop = false;
  int delay_ms = 0;  // summed over the delay faults that fire
};

class FaultInjector {
 public:
  FaultInjector() = default;
  // Keeps the faults of `rank` (their index in the config list keys their draws).
  FaultInjector(const std::vector<config::FaultConfig>& faults, std::uint32_t rank);
  // The faults of parameter server `server` (config `server: k`): kill and hang, by the
  // server's own update count. The server acts on step_faults itself (it is a thread: it cannot
  // raise a signal on itself), so begin_step and before_send are not for it.
  [[nodiscard]] static FaultInjector for_server(const std::vector<config::FaultConfig>& faults,
                                                int server);

  [[nodiscard]] bool empty() const noexcept { return faults_.empty(); }
  [[nodiscard]] StepFaults step_faults(std::uint64_t step) const;
  [[nodiscard]] MessageFaults message_faults(std::uint64_t step, std::uint64_t index) const;

  // A worker that replaces a lost one (restart policy) runs without faults: the replacement
  // would otherwise hit the same fault at the same step again, and again.
  void disarm() noexcept { faults_.clear(); }

  // The start of worker step `step`: kills or stops this process, or sleeps. Returns the
  // seconds slept (the caller counts them as compute time).
  double begin_step(std::uint64_t step);
  // A new request from the coordinator: until the next begin_step, messages are not a step's.
  void end_step() noexcept { step_.reset(); }
  // Before a message is sent: sleeps its delay; false when it is to be dropped. `droppable`
  // is false for messages without a retry path (pushes to parameter servers): they are only
  // delayed.
  [[nodiscard]] bool before_send(bool droppable);

 private:
  struct Armed {
    config::FaultConfig fault;
    std::uint64_t index = 0;  // in the config's list
    bool logged = false;
  };
  [[nodiscard]] bool fires_at_step(const Armed& a, std::uint64_t step) const;
  [[nodiscard]] bool fires_on_message(const Armed& a, std::uint64_t step,
                                      std::uint64_t index) const;
  void log_fired(Armed& a, std::uint64_t step, const char* unit);

  std::vector<Armed> faults_;
  std::uint32_t rank_ = 0;
  std::optional<std::uint64_t> step_;  // the step in progress
  std::uint64_t messages_ = 0;         // sent in that step so far
};

}  // namespace dt::roles
