#pragma once
// Kill points, a TESTING hook (as rabit's mock engine kills a worker at a chosen collective
// call): the code names the moments where a crash would leave the most in flight (each message
// sent or received, by kind; each file written and moved into place), and a test makes a process
// SIGKILL itself at one of them, then checks the documented outcome. tests/e2e/test_kill_points.py
// enumerates every point a short run reaches and kills at each.
//
// Driven by the environment, read once (workers inherit it from the coordinator):
//   DISTTRAIN_TEST_TRACE_POINTS=FILE   each process appends "ROLE|POINT|N" to FILE the first
//                                      (N = 1) and the 4th time (N = 4) it reaches POINT
//                                      (ROLE: "coordinator", "worker 1", ...)
//   DISTTRAIN_TEST_KILL_POINT="ROLE|POINT|N"
//                                      the process of that role SIGKILLs itself the N-th time it
//                                      reaches POINT (N from 1) ...
//   DISTTRAIN_TEST_KILL_MARK=FILE      ... after creating FILE, and only if it could (O_EXCL): the
//                                      kill fires once per test, not again in a replacement
//                                      worker that inherits the same environment; the test
//                                      reads the file to know that it fired.
// Unset (every normal run), reach() costs one load of a flag.
//
// Points: "send <kind>" before a message is encoded for sending, "receive <kind>" once one is
// decoded, "write <file>" before a file is written and "rename <file>" before its temporary copy
// replaces it (digits in file names read as '#'). Thread-safe.

#include <string>
#include <string_view>

namespace dt::kill_points {

// The role this process reports (its log prefix); set before any point is reached.
void set_role(std::string role);

// Counts `point` for this process; traces it, or kills the process, as the environment says.
void reach(std::string_view what, std::string_view name);

}  // namespace dt::kill_points
