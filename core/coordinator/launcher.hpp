#pragma once
// Spawning, supervising and reaping local worker processes. Each child runs in its own process
// group (so the terminal's Ctrl-C reaches only the coordinator, which then stops the workers in
// order), asks the kernel to SIGKILL it when the coordinator dies (PR_SET_PDEATHSIG: no orphan
// outlives a coordinator killed with SIGKILL), and writes stdout and stderr to its own log file.
// The Launcher reaps every child on every path: its destructor terminates and waits for any
// child still running.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dt {

struct ExitStatus {
  int code = 0;    // exit code when exited normally
  int signal = 0;  // terminating signal, 0 when exited normally
  // "exited with code 3", "was killed by signal 9 (SIGKILL)"
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] bool success() const noexcept { return signal == 0 && code == 0; }
};

struct ChildExit {
  int rank = 0;
  pid_t pid = 0;
  ExitStatus status;
};

class Launcher {
 public:
  Launcher() = default;
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Starts `program args...` as worker `rank`; IoError when fork or exec is impossible (an exec
  // failure shows up as exit code 127 with the reason in the log). The child inherits this
  // process's environment changed by `environment`: "NAME=VALUE" sets NAME, "NAME" removes it
  // (keys go to workers this way, never on their command line).
  pid_t spawn(int rank, const std::filesystem::path& program, const std::vector<std::string>& args,
              const std::filesystem::path& log_path,
              const std::vector<std::string>& environment = {});

  // Children that exited since the last call (reaped, never reported twice).
  [[nodiscard]] std::vector<ChildExit> poll();
  [[nodiscard]] std::optional<pid_t> pid_of(int rank) const;
  [[nodiscard]] std::optional<std::filesystem::path> log_of(int rank) const;
  [[nodiscard]] bool running(int rank) const;
  // SIGKILL to `rank`'s running child (a hung or lost worker), reaped before it returns. Its
  // exit is not reported by poll(): the caller already knows why it ended.
  void kill(int rank);

  // SIGTERM to every running child, then SIGKILL to those still running after `grace`; returns
  // once every child is reaped.
  void stop_all(std::chrono::milliseconds grace);
  // Waits up to `timeout` for every child to exit by itself; false if some are still running.
  // Sleeps until a child exits (a pidfd per child, Linux >= 5.3), not in polling slices.
  [[nodiscard]] bool wait_all(std::chrono::milliseconds timeout);
  // Waits up to `timeout` for `rank`'s running child to end (true once it has; its exit is
  // then reported by the next poll()): a child killed a moment ago has closed its sockets
  // before the kernel lets its parent reap it.
  [[nodiscard]] bool await_child(int rank, std::chrono::milliseconds timeout);

 private:
  using Clock = std::chrono::steady_clock;
  struct Child {
    int rank;
    pid_t pid;
    std::filesystem::path log;
    bool reaped = false;
    ExitStatus status;
    int pidfd = -1;  // readable once the child exits; -1 when reaped or unavailable
    void reap(int wait_status);  // records the status, closes the pidfd
  };
  [[nodiscard]] const Child* latest(int rank) const;
  // Returns when a running child exits, at `deadline`, or on a signal (spuriously is fine).
  void await_exit(Clock::time_point deadline) const;
  // Reaps the children that exit until `done()` holds (true) or `timeout` passes (false); the
  // exits it reaps are kept for the next poll().
  [[nodiscard]] bool wait_until(const std::function<bool()>& done,
                                std::chrono::milliseconds timeout);
  std::vector<Child> children_;
  std::vector<ChildExit> unreported_;  // reaped by wait_all, not yet returned by poll
};

// The path of the running executable (/proc/self/exe), to re-execute it as a worker.
[[nodiscard]] std::filesystem::path self_executable();
// The last `lines` lines of a log file, for error messages ("" when unreadable).
[[nodiscard]] std::string tail_of(const std::filesystem::path& path, int lines);

}  // namespace dt
