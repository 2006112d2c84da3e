#include "core/protocol/faults.hpp"

#include "base/log.hpp"
#include "base/random.hpp"

#include <chrono>
#include <csignal>
#include <thread>

namespace dt::roles {

using config::FaultAction;

namespace {

// Step draws and message draws of one fault are separate coordinates of the same generator.
constexpr std::uint64_t kStepDraw = 0;
constexpr std::uint64_t kMessageDraw = 1;

double draw(const config::FaultConfig& fault, std::uint32_t rank, std::uint64_t index,
            std::uint64_t step, std::uint64_t kind, std::uint64_t message) {
  return random::uniform(fault.seed, random::stream::kFaults,
                         random::hash(rank, index, step, kind), message);
}

bool per_message(FaultAction action) {
  return action == FaultAction::kDrop || action == FaultAction::kDelay;
}

}  // namespace

FaultInjector::FaultInjector(const std::vector<config::FaultConfig>& faults, std::uint32_t rank)
    : rank_(rank) {
  for (std::size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].rank == static_cast<int>(rank)) faults_.push_back({faults[i], i, false});
  }
}

FaultInjector FaultInjector::for_server(const std::vector<config::FaultConfig>& faults,
                                        int server) {
  FaultInjector out;
  // Draws keyed apart from every worker rank's.
  out.rank_ = 0x80000000U | static_cast<std::uint32_t>(server);
  for (std::size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].server == server) out.faults_.push_back({faults[i], i, false});
  }
  return out;
}

bool FaultInjector::fires_at_step(const Armed& a, std::uint64_t step) const {
  const auto& f = a.fault;
  if (f.at_step) {
    // kill and hang once, at that step; the others at every step from then on.
    const bool once = f.action == FaultAction::kKill || f.action == FaultAction::kHang ||
                      f.action == FaultAction::kLeave;
    return once ? step == *f.at_step : step >= *f.at_step;
  }
  return draw(f, rank_, a.index, step, kStepDraw, 0) < f.probability;
}

StepFaults FaultInjector::step_faults(std::uint64_t step) const {
  StepFaults out;
  for (const auto& a : faults_) {
    if (per_message(a.fault.action) || !fires_at_step(a, step)) continue;
    switch (a.fault.action) {
      case FaultAction::kKill: out.kill = true; break;
      case FaultAction::kHang: out.hang = true; break;
      case FaultAction::kSlow: out.slow_ms += a.fault.ms; break;
      case FaultAction::kLeave: out.leave = true; break;
      case FaultAction::kDrop:
      case FaultAction::kDelay: break;
    }
  }
  return out;
}

bool FaultInjector::fires_on_message(const Armed& a, std::uint64_t step,
                                     std::uint64_t index) const {
  const auto& f = a.fault;
  if (!per_message(f.action)) return false;
  return f.at_step ? step >= *f.at_step
                   : draw(f, rank_, a.index, step, kMessageDraw, index) < f.probability;
}

MessageFaults FaultInjector::message_faults(std::uint64_t step, std::uint64_t index) const {
  MessageFaults out;
  for (const auto& a : faults_) {
    if (!fires_on_message(a, step, index)) continue;
    if (a.fault.action == FaultAction::kDrop) out.drop = true;
    if (a.fault.action == FaultAction::kDelay) out.delay_ms += a.fault.ms;
  }
  return out;
}

void FaultInjector::log_fired(Armed& a, std::uint64_t step, const char* unit) {
  // A fault of every step from at_step on says so once; a drawn one each time it fires.
  if (a.logged) return;
  if (a.fault.at_step) {
    a.logged = true;
    log::warn("injected fault: {} at step {} (every {} from now on{})",
              config::name_of(a.fault.action), step, unit,
              a.fault.action == FaultAction::kDrop ? std::string()
                                                   : fmt::format(", +{} ms", a.fault.ms));
  } else {
    log::info("injected fault: {} at step {}{}", config::name_of(a.fault.action), step,
              a.fault.action == FaultAction::kDrop ? std::string()
                                                   : fmt::format(" (+{} ms)", a.fault.ms));
  }
}

double FaultInjector::begin_step(std::uint64_t step) {
  step_ = step;
  messages_ = 0;
  if (faults_.empty()) return 0;
  const auto fired = step_faults(step);
  // Logged before it acts: a killed worker's log is the coordinator's "its log ends" line.
  // The log's thread stops with the process: the line must be out before the signal.
  if (fired.kill) {
    log::warn("injected fault: kill at step {}", step);
    (void)log::flush();
    std::raise(SIGKILL);
  }
  if (fired.hang) {
    log::warn("injected fault: hang at step {} (SIGSTOP; heartbeats stop)", step);
    (void)log::flush();
    std::raise(SIGSTOP);
    log::warn("resumed after the injected hang (SIGCONT)");
  }
  if (fired.leave) {
    // The handler (signals::install_leave_handler) only raises a flag: the step goes on, and
    // the worker leaves when it next waits for the coordinator (async: before its next step).
    log::warn("injected fault: leave at step {} (SIGTERM)", step);
    std::raise(SIGTERM);
  }
  if (fired.slow_ms <= 0) return 0;
  for (auto& a : faults_) {
    if (a.fault.action == FaultAction::kSlow && fires_at_step(a, step)) log_fired(a, step, "step");
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(fired.slow_ms));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool FaultInjector::before_send(bool droppable) {
  if (faults_.empty() || !step_) return true;
  const std::uint64_t index = messages_++;
  const auto fired = message_faults(*step_, index);
  if (!fired.drop && fired.delay_ms == 0) return true;
  for (auto& a : faults_) {
    if (a.fault.action == FaultAction::kDrop && !droppable) continue;
    if (fires_on_message(a, *step_, index)) log_fired(a, *step_, "message");
  }
  if (fired.drop && droppable) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(fired.delay_ms));
  return true;
}

}  // namespace dt::roles
