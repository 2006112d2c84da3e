// disttrain leave RUN_DIR --rank N: a planned leave of worker N of the elastic run writing
// RUN_DIR (core/coordinator/leave_request.hpp, docs/elastic.md).

#include "cli/commands.hpp"
#include "core/coordinator/leave_request.hpp"
#include "base/error.hpp"

#include <nlohmann/json.hpp>

namespace dt::cli {
namespace {

struct LeaveArgs {
  std::string run_dir;
  int rank = -1;
  bool no_wait = false;
  int timeout_ms = 60000;
  bool json = false;
};

std::string said(const roles::LeaveDone& done, const LeaveArgs& args) {
  const auto& w = done.worker;
  if (args.no_wait) {
    return fmt::format("sent SIGTERM to worker {} (pid {}); it leaves after the step in hand\n",
                       w.rank, w.pid);
  }
  if (!done.recorded) {
    return fmt::format("the run in {} ended before worker {} (pid {}) left; its summary.json "
                       "says how it ended\n",
                       args.run_dir, w.rank, w.pid);
  }
  return fmt::format("worker {} (pid {}) left the run after step {}; {} worker{} go on\n", w.rank,
                     w.pid, done.step, done.workers, done.workers == 1 ? "" : "s");
}

int run_leave(const LeaveArgs& args) {
  if (args.timeout_ms < 1) {
    fail<UsageError>("leave: --timeout-ms {}: give a number of milliseconds >= 1", args.timeout_ms);
  }
  const auto done = roles::request_leave({args.run_dir, args.rank, !args.no_wait,
                                          std::chrono::milliseconds(args.timeout_ms)});
  if (!args.json) {
    print(said(done, args));
    return 0;
  }
  nlohmann::ordered_json j = {{"rank", done.worker.rank}, {"pid", done.worker.pid},
                              {"signalled", true}, {"recorded", done.recorded}};
  if (done.recorded) {
    j["step"] = done.step;
    j["workers"] = done.workers;
  }
  print(j.dump() + "\n");
  return 0;
}

}  // namespace

void add_leave(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<LeaveArgs>();
  auto* cmd = app.add_subcommand(
      "leave", "ask a worker of a running elastic run to leave it (a planned leave: it finishes "
               "its step, its rows go to the others; docs/elastic.md)");
  cmd->add_option("run_dir", args->run_dir, "the run's output folder (runs/<name> by default)")
      ->required();
  cmd->add_option("--rank", args->rank, "the worker that leaves")->required()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-wait", args->no_wait, "return once the worker is signalled");
  cmd->add_option("--timeout-ms", args->timeout_ms,
                  "how long to wait for the run to record the leave (default 60000)");
  cmd->add_flag("--json", args->json, "print one JSON object: rank, pid, recorded, step, workers");
  cmd->callback([&action, args] { action = [args] { return run_leave(*args); }; });
}

}  // namespace dt::cli
