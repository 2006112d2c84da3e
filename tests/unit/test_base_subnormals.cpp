// base/subnormals: the unit binary's main flushes subnormals, as disttrain's does; inputs and
// results below the smallest normal double read and come out as zero, on this thread and on
// threads started after it.

#include "base/subnormals.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace {

// volatile: the compiler must not fold the products at compile time (where no flag applies).
double multiply(double a, double b) {
  volatile double x = a;
  volatile double y = b;
  return x * y;
}

}  // namespace

TEST_CASE("subnormals: results and inputs below the smallest normal double are zero") {
  REQUIRE(dt::subnormals::flushed());
  const double smallest_normal = std::numeric_limits<double>::min();
  // A result that would be subnormal (2^-1023) is zero, not 1.1e-308.
  CHECK(multiply(smallest_normal, 0.5) == 0.0);
  // A subnormal input (made from bits, so no operation flushed it yet) reads as zero: scaled
  // back up by 2^60 it would be about 5.7e-306 without DAZ.
  CHECK(multiply(std::numeric_limits<double>::denorm_min(), 0x1p+60) == 0.0);
  // Normal values are untouched: the smallest normal times 1, and exp's deep tail just above it.
  CHECK(multiply(smallest_normal, 1.0) == smallest_normal);
  CHECK(std::exp(-708.0) > 0.0);
  CHECK(multiply(std::exp(-700.0), std::exp(-30.0)) == 0.0);  // 5e-318 would be subnormal
}

TEST_CASE("subnormals: a thread started after the flush flushes too") {
  bool flushed = false;
  double product = 1.0;
  std::thread t([&] {
    flushed = dt::subnormals::flushed();
    product = multiply(std::numeric_limits<double>::min(), 0.25);
  });
  t.join();
  CHECK(flushed);
  CHECK(product == 0.0);
}
