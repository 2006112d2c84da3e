#include "core/coordinator/leave_request.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/net.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

namespace dt::roles {
namespace {

constexpr std::chrono::milliseconds kPoll{50};

// The arguments of a process of this host; empty when it is gone (or not ours to read).
std::vector<std::string> command_line(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    const auto end = std::min(all.find('\0', at), all.size());
    args.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return args;
}

bool still_runs(const Member& m) {
  return !m.started.empty() && files::process_start_time(static_cast<long>(m.pid)) == m.started;
}

// The run's members, or why there is no run to ask.
Members running_members(const std::filesystem::path& run_dir) {
  const auto file = run_dir / kMembersFile;
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    fail<UsageError>("leave: {} is not a folder; give the output folder of a running `disttrain "
                     "run` (its output.dir, runs/<name> by default)",
                     run_dir.string());
  }
  if (!std::filesystem::exists(file, ec)) {
    fail<UsageError>("leave: no run with fault_tolerance.elastic is training in {} ({} is "
                     "absent: it is written once the first step is done, and removed when the "
                     "run ends); a run without elastic has no planned leave",
                     run_dir.string(), file.string());
  }
  auto members = read_members(file);
  if (members.coordinator.host != net::this_host()) {
    fail<UsageError>("leave: the run in {} is coordinated from host {}, not this one ({}); run "
                     "`disttrain leave` there",
                     run_dir.string(), members.coordinator.host, net::this_host());
  }
  if (!still_runs(members.coordinator)) {
    fail<UsageError>("leave: the run in {} is not running (its coordinator, pid {}, has ended "
                     "without removing {}); nothing to leave",
                     run_dir.string(), members.coordinator.pid, file.string());
  }
  return members;
}

std::optional<std::uint64_t> leave_step(const nlohmann::json& events, int rank) {
  std::optional<std::uint64_t> step;
  for (const auto& e : events) {
    if (e.value("event", "") == "leave" && e.value("rank", -1) == rank) {
      step = e.value("step", std::uint64_t{0});
    }
  }
  return step;
}

const Member& find_worker(const Members& members, const LeaveAsk& ask) {
  const auto it = std::find_if(members.workers.begin(), members.workers.end(),
                               [&](const Member& m) { return m.rank == ask.rank; });
  if (it != members.workers.end()) return *it;
  if (const auto step = leave_step(members.events, ask.rank)) {
    fail<UsageError>("leave: worker {} has already left the run in {} (after step {})", ask.rank,
                     ask.run_dir.string(), *step);
  }
  std::string ranks;
  for (const auto& m : members.workers) ranks += (ranks.empty() ? "" : ", ") + std::to_string(m.rank);
  fail<UsageError>("leave: the run in {} has no worker {} training; its workers are {}",
                   ask.run_dir.string(), ask.rank, ranks);
}

// The process is worker `rank` of this job still: the same start time, `disttrain worker` on
// its command line, and this job's id when the coordinator started it (--job).
void check_process(const Member& w, const Members& members, const LeaveAsk& ask) {
  if (w.host != net::this_host()) {
    fail<UsageError>("leave: worker {} runs on host {} (pid {}), not on this one; a planned "
                     "leave is a SIGTERM to its process: run `kill -TERM {}` on {}",
                     w.rank, w.host, w.pid, w.pid, w.host);
  }
  const auto args = command_line(w.pid);
  const bool worker = std::find(args.begin(), args.end(), "worker") != args.end();
  const auto job = std::find(args.begin(), args.end(), "--job");
  const bool other_job = job != args.end() && std::next(job) != args.end() &&
                         *std::next(job) != fmt::format("{:016x}", members.job_id);
  if (!still_runs(w) || !worker || other_job) {
    fail<UsageError>("leave: worker {}'s process (pid {}) is no longer running in {}; the run "
                     "may be handling its loss now: see {}",
                     ask.rank, w.pid, ask.run_dir.string(),
                     (ask.run_dir / "workers" / fmt::format("{}.log", ask.rank)).string());
  }
}

// After the signal: until the members file no longer lists the rank.
LeaveDone await_leave(LeaveDone done, const LeaveAsk& ask, const Member& coordinator) {
  const auto file = ask.run_dir / kMembersFile;
  const auto deadline = std::chrono::steady_clock::now() + ask.timeout;
  for (;;) {
    std::error_code ec;
    // The run ended first (a signal during the final evaluation waits for the end): the
    // worker is out of it either way; its summary.json says how it ended.
    if (!std::filesystem::exists(file, ec) || !still_runs(coordinator)) return done;
    const auto members = read_members(file);
    const bool listed = std::any_of(members.workers.begin(), members.workers.end(),
                                    [&](const Member& m) { return m.rank == ask.rank; });
    if (!listed) {
      const auto step = leave_step(members.events, ask.rank);
      if (!step) {
        fail<TrainingError>("leave: worker {} was lost instead of leaving (the signal came "
                            "before training or during a step it could not finish); see {}",
                            ask.rank, (ask.run_dir / "workers" / fmt::format("{}.log", ask.rank)).string());
      }
      done.recorded = true;
      done.step = *step;
      done.workers = static_cast<int>(members.workers.size());
      return done;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      fail<TimeoutError>("leave: worker {} (pid {}) got SIGTERM, but the run has not recorded "
                         "its leave within {} ms; it leaves after the step in hand: wait longer "
                         "with --timeout-ms, or see {}",
                         ask.rank, done.worker.pid, ask.timeout.count(),
                         (ask.run_dir / "workers" / fmt::format("{}.log", ask.rank)).string());
    }
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace

LeaveDone request_leave(const LeaveAsk& ask) {
  const auto members = running_members(ask.run_dir);
  const Member& w = find_worker(members, ask);
  check_process(w, members, ask);
  if (::kill(static_cast<pid_t>(w.pid), SIGTERM) != 0) {
    fail<UsageError>("leave: cannot signal worker {} (pid {}): {}", ask.rank, w.pid,
                     std::strerror(errno));
  }
  LeaveDone done{.worker = w};
  return ask.wait ? await_leave(std::move(done), ask, members.coordinator) : done;
}

}  // namespace dt::roles
