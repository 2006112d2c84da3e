#pragma once
// `disttrain leave RUN_DIR --rank N`: asks worker N of the elastic run writing RUN_DIR to leave
// (docs/elastic.md). It finds the worker's process in RUN_DIR/members.json (members_file.hpp),
// checks that it is that worker still (its start time, its command line), sends it SIGTERM, the
// planned leave's signal, and waits until the run records the leave.

#include "core/coordinator/members_file.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>

namespace dt::roles {

struct LeaveAsk {
  std::filesystem::path run_dir;
  int rank = 0;
  bool wait = true;                          // false: return once the signal is sent
  std::chrono::milliseconds timeout{60000};  // for the leave to be recorded
};

struct LeaveDone {
  Member worker;             // the process signalled
  bool recorded = false;     // the run recorded the leave (wait only; false: the run ended first)
  std::uint64_t step = 0;    // the last step it trained
  int workers = 0;           // workers training after it
};

// UsageError / DataError (exit 2) when there is no such running run or worker, or the worker
// runs on another host (the message says what to run there); TimeoutError (exit 3) when the
// leave is not recorded in time; TrainingError (exit 3) when the run loses the worker instead
// (a failure, not a leave).
[[nodiscard]] LeaveDone request_leave(const LeaveAsk& ask);

}  // namespace dt::roles
