// The cost of the timeline's hooks on a thread that records, and on one that does not
// (output.timeline off), in ns a span: what a step pays per phase. Three kinds of hook:
//   pair:    timeline::start() + timeline::span(): two clock reads and an append;
//   lap:     timeline::Lap::mark(): one clock read (a span ends where the next starts);
//   between: timeline::span_between() over times the step path has read anyway: the append only.
// Built and run by bench/bench_timeline.py:
//   g++ -std=c++20 -O2 -I. bench/timeline_hooks.cpp base/timeline.cpp -o /tmp/timeline_hooks
#include "base/timeline.hpp"

#include <time.h>

#include <chrono>
#include <cstdio>

namespace tl = dt::timeline;

namespace {

constexpr int kPerStep = 5;

// The thread's CPU time, not the wall clock's: on a machine shared with other jobs a loop's
// wall time counts the time other processes ran.
double cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

std::uint64_t g_step = 0;  // steps go on from one measure to the next, as in a run

template <typename Hook>
double ns_per_span(std::uint64_t steps, Hook hook) {
  const double begin = cpu_ns();
  for (std::uint64_t k = 0; k < steps; ++k) {
    tl::set_step(++g_step);
    hook();
  }
  return (cpu_ns() - begin) / static_cast<double>(steps * kPerStep);
}

void pairs() {
  for (int k = 0; k < kPerStep; ++k) tl::span(tl::Phase::kCompute, tl::start());
}

void laps() {
  tl::Lap lap;  // its start is the step's one read more than its marks
  for (int k = 0; k < kPerStep; ++k) lap.mark(tl::Phase::kCompute);
}

void betweens() {
  const auto t = tl::Clock::time_point(std::chrono::nanoseconds(1000));
  for (int k = 0; k < kPerStep; ++k) tl::span_between(tl::Phase::kCompute, t, t);
}

}  // namespace

int main() {
  constexpr std::uint64_t kSteps = 2'000'000;
  const double off = ns_per_span(kSteps, pairs);  // no recorder on this thread
  const double lap_off = ns_per_span(kSteps, laps);
  tl::Recorder recorder(1000);
  const tl::Scope scope(&recorder);
  (void)ns_per_span(kSteps / 10, pairs);  // the window fills and the buffer settles
  const double on = ns_per_span(kSteps, pairs);
  const double lap = ns_per_span(kSteps, laps);
  const double between = ns_per_span(kSteps, betweens);
  std::printf("{\"ns_per_span_off\": %.2f, \"ns_per_lap_off\": %.2f, \"ns_per_span_on\": %.2f, "
              "\"ns_per_lap_mark_on\": %.2f, \"ns_per_span_between_on\": %.2f}\n",
              off, lap_off, on, lap, between);
  return 0;
}
