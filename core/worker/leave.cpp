#include "core/worker/leave.hpp"

#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"
#include "transports/transport.hpp"

namespace dt::roles {

bool arm_leave(const config::Config& config, const WorkerOptions& options) {
  if (!config.fault_tolerance.elastic || !options.own_process) return false;
  signals::install_leave_handler();
  return true;
}

bool leave_due(const WorkerOptions& options) noexcept {
  return options.may_leave && signals::leave_requested();
}

int leave_run(transport::Connection& connection, const WorkerOptions& options) {
  log::notice("leaving the run (SIGTERM, fault_tolerance.elastic): the coordinator deals this "
              "worker's rows to the others");
  protocol::Envelope leave{.type = protocol::Type::kLeave, .rank = options.rank};
  try {
    // Delivered before the process ends: sockets linger for it (transports/zmq).
    connection.send(protocol::encode(std::move(leave), options.job_id),
                    transport::deadline_in(kSendDeadline));
  } catch (const Error& e) {
    log::warn("could not tell the coordinator ({}); it sees this worker's exit instead",
              e.what());
  }
  return 0;
}

}  // namespace dt::roles
