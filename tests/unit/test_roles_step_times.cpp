// A worker's step times: percentiles within 2.2% of the exact ones, the maximum exact, and the
// memory bounded whatever the number of steps (it kept every step's time before).
#include "core/worker/step_times.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using dt::roles::StepTimes;

namespace {

double exact(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

TEST_CASE("step times: percentiles of a spread of times within 2.2%, the maximum exact") {
  StepTimes t;
  std::vector<double> all;
  // 100,000 times spread over five decades, a long tail among them, in no order.
  for (int i = 0; i < 100000; ++i) {
    const double s = 1e-6 * std::pow(10.0, 5.0 * ((i * 7919) % 100000) / 100000.0);
    t.add(s);
    all.push_back(s);
  }
  t.add(3.75);
  all.push_back(3.75);
  for (double q : {0.0, 0.1, 0.5, 0.9, 0.99}) {
    const double want = exact(all, q);
    CHECK(std::abs(t.percentile(q) - want) <= 0.022 * want);
  }
  CHECK(t.percentile(1.0) == 3.75);
  CHECK(t.count() == 100001);
}

TEST_CASE("step times: one step, no step, and odd values") {
  StepTimes t;
  CHECK(t.percentile(0.5) == 0.0);
  t.add(0.0123);
  for (double q : {0.0, 0.5, 0.99, 1.0}) CHECK(t.percentile(q) == 0.0123);  // within min..max
  t.add(-1.0);           // a clock that stepped back
  t.add(std::nan(""));   // never seen, but never a crash
  CHECK(t.count() == 3);
  CHECK(t.percentile(0.0) == 0.0);
  CHECK(t.percentile(1.0) == 0.0123);
}

TEST_CASE("step times: memory does not grow with the steps") {
  StepTimes t;
  for (int i = 0; i < 1000000; ++i) t.add(1e-4);
  CHECK(sizeof(StepTimes) < 8 * 1024);
  CHECK(t.percentile(0.5) == doctest::Approx(1e-4).epsilon(0.022));
}
