#pragma once
// loss.svg's axes: which values get a tick, a grid line and a label. Ticks are "nice numbers"
// (1, 2 or 5 times a power of ten, and multiples of that step), so a reader sees 0.2, 0.4, 0.6
// rather than 0.009318 and 0.03602. A value axis turns logarithmic when its data asks for it
// (kLogRatio). Pure functions, no SVG: plot.cpp draws, the unit tests check the numbers.

#include <string>
#include <vector>

namespace dt::output::plot {

// A value axis is logarithmic when every value is > 0 and the largest is more than this many
// times the smallest: on a linear axis the last half of such a curve would lie flat on the floor.
inline constexpr double kLogRatio = 50;

struct Tick {
  double value = 0;
  std::string label;  // empty: a minor tick (a grid line with no label)
};

struct Axis {
  double lo = 0, hi = 1;  // the axis' ends, data units (both ticks)
  bool log = false;
  std::vector<Tick> ticks;
  // Where `v` falls between the ends: 0 at lo, 1 at hi (log10 space on a log axis).
  [[nodiscard]] double fraction(double v) const;
};

// The nice step near `range / (target - 1)`: 1, 2 or 5 times a power of ten.
[[nodiscard]] double nice_step(double range, int target);
// A linear axis covering [lo, hi], its ends on multiples of a nice step, about `target` ticks.
[[nodiscard]] Axis linear_axis(double lo, double hi, int target = 6);
// A log axis from the power of ten at or below lo to the one at or above hi: major ticks at the
// powers of ten (also at 2 and 5 times them when it spans two decades or fewer), minor ones at
// the other integer multiples.
[[nodiscard]] Axis log_axis(double lo, double hi);
// The axis for these values (non-finite ones ignored): log by kLogRatio's rule, else linear.
// With no finite value, 0 to 1.
[[nodiscard]] Axis value_axis(const std::vector<double>& values, int target = 6);
// A tick's text: exactly as many decimals as the step needs ("0.25", "1500"); with a step
// below 0.0001 or values from 1e7 up, the shortest exponent form ("2e-05", "1e+08").
[[nodiscard]] std::string tick_label(double value, double step);

}  // namespace dt::output::plot
