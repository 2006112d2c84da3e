// The cost of one timeline hook pair (timeline::start + timeline::span) on a thread that
// records, and on one that does not (output.timeline off), in ns: what a step pays per phase.
// Built and run by bench/bench_timeline.py:
//   g++ -std=c++20 -O2 -I. bench/timeline_hooks.cpp base/timeline.cpp -o /tmp/timeline_hooks
#include "base/timeline.hpp"

#include <chrono>
#include <cstdio>

namespace tl = dt::timeline;

namespace {

double ns_per_pair(std::uint64_t steps, int per_step) {
  const auto begin = std::chrono::steady_clock::now();
  for (std::uint64_t step = 1; step <= steps; ++step) {
    tl::set_step(step);
    for (int k = 0; k < per_step; ++k) tl::span(tl::Phase::kCompute, tl::start());
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() -
                                                             begin).count();
  return ns / static_cast<double>(steps * static_cast<std::uint64_t>(per_step));
}

}  // namespace

int main() {
  constexpr std::uint64_t kSteps = 2'000'000;
  constexpr int kPerStep = 5;
  const double off = ns_per_pair(kSteps, kPerStep);  // no recorder on this thread
  tl::Recorder recorder(1000);
  const tl::Scope scope(&recorder);
  (void)ns_per_pair(kSteps / 10, kPerStep);  // the window fills and the vector settles
  const double on = ns_per_pair(kSteps, kPerStep);
  std::printf("{\"ns_per_span_off\": %.2f, \"ns_per_span_on\": %.2f}\n", off, on);
  return 0;
}
