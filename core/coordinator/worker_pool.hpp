#pragma once
// Where the workers of a local run live: child processes (ipc, tcp) or threads of the
// coordinator (inproc). The coordinator supervises both the same way.

#include "core/coordinator/launcher.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dt::transport {
class Transport;
}

namespace dt::roles {

class WorkerPool {
 public:
  virtual ~WorkerPool() = default;
  // Starts worker `rank`; again after a failure for its replacement (its own log file,
  // workers/<rank>.restart<n>.log, so the lost worker's log is kept).
  virtual void start(int rank, const std::string& endpoint) = 0;
  // Ends `rank`'s worker at once (hung, silent or failed) and reaps it; no exit is reported.
  virtual void kill(int rank) = 0;
  // Workers that ended since the last call.
  [[nodiscard]] virtual std::vector<ChildExit> poll() = 0;
  [[nodiscard]] virtual std::int64_t pid_of(int rank) const = 0;
  // The tail of the worker's own log, for error messages ("" when there is none).
  [[nodiscard]] virtual std::string last_words(int rank) const = 0;
  // Waits up to `timeout` for `rank`'s worker to end, true once it has (its exit then comes
  // from poll()); false at the timeout and where no process can be watched (threads, a rank
  // that joined from elsewhere).
  [[nodiscard]] virtual bool await_end(int /*rank*/, std::chrono::milliseconds /*timeout*/) {
    return false;
  }
  // Waits for workers to finish by themselves; false when some are still running at the timeout.
  [[nodiscard]] virtual bool wait_all(std::chrono::milliseconds timeout) = 0;
  // Stops every worker still running, at once; returns when all are gone.
  virtual void stop_all() = 0;
  // `rank` said hello from process `pid` (of its own host, for a worker that joined).
  virtual void joined(int /*rank*/, std::int64_t /*pid*/) {}
  // `rank`'s slot is now held by a worker that joined the running job by itself (elastic):
  // supervised from now on as a joining rank (with_remote_ranks), whoever held it before.
  virtual void taken_over(int rank, std::int64_t pid) { joined(rank, pid); }
};

struct ProcessPoolOptions {
  std::filesystem::path program;  // this executable
  std::filesystem::path log_dir;  // workers/<rank>.log
  std::uint64_t job_id = 0;
  int log_level = 2;
  // Changes to the workers' environment (Launcher::spawn): their keys (core/protocol/keys.hpp).
  std::vector<std::string> environment;
};

[[nodiscard]] std::unique_ptr<WorkerPool> make_process_pool(const ProcessPoolOptions& options);
[[nodiscard]] std::unique_ptr<WorkerPool> make_thread_pool(transport::Transport& transport,
                                                           std::uint64_t job_id);
// Ranks `first_remote` and up are started by someone else (`disttrain worker --connect`, a
// launcher) and join by themselves: `local` runs the others. A joining rank is supervised by
// heartbeats only: start (also for a replacement) just waits for it to join, kill cannot reach
// it (the session tells it to stop: CoordinatorSession::end_worker), its log is on its own
// host. Ranks from `end_remote` on (an elastic run's join slots) are joiners' (taken_over),
// or `local`'s when a resumed run starts a joiner's slot again.
[[nodiscard]] std::unique_ptr<WorkerPool> with_remote_ranks(std::unique_ptr<WorkerPool> local,
                                                            int first_remote, int end_remote);

}  // namespace dt::roles
