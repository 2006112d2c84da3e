#include "core/outputs/plot_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dt::output::plot {

double Axis::fraction(double v) const {
  if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return (v - lo) / (hi - lo);
}

double nice_step(double range, int target) {
  const double raw = range / std::max(1, target - 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double nice = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return nice * magnitude;
}

std::string tick_label(double value, double step) {
  if (value == 0) return "0";
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (decimals > 4 || std::abs(value) >= 1e7) {
    // Far from 1: the mantissa and exponent, trimmed ("2e-07", "1.5e+08").
    return fmt::format("{:g}", value);
  }
  return fmt::format("{:.{}f}", value, decimals);
}

Axis linear_axis(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, target);
  // Ticks are whole multiples of the step, each computed from its index, so that no rounding
  // error builds up along the axis and every label is the exact round number.
  const auto first = static_cast<long long>(std::floor(lo / step + 1e-9));
  const auto last = static_cast<long long>(std::ceil(hi / step - 1e-9));
  Axis axis;
  axis.lo = static_cast<double>(first) * step;
  axis.hi = static_cast<double>(last) * step;
  for (long long k = first; k <= last; ++k) {
    const double v = static_cast<double>(k) * step;
    axis.ticks.push_back({v, tick_label(v, step)});
  }
  return axis;
}

Axis log_axis(double lo, double hi) {
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (last <= first) last = first + 1;
  Axis axis;
  axis.log = true;
  axis.lo = std::pow(10.0, first);
  axis.hi = std::pow(10.0, last);
  const bool few_decades = last - first <= 2;
  for (int e = first; e <= last; ++e) {
    const double decade = std::pow(10.0, e);
    for (int m = 1; m <= (e == last ? 1 : 9); ++m) {
      const double v = m * decade;
      const bool major = m == 1 || (few_decades && (m == 2 || m == 5));
      axis.ticks.push_back({v, major ? tick_label(v, decade) : std::string()});
    }
  }
  return axis;
}

Axis value_axis(const std::vector<double>& values, int target) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!std::isfinite(lo)) return linear_axis(0, 1, target);
  if (lo > 0 && hi / lo > kLogRatio) return log_axis(lo, hi);
  return linear_axis(lo, hi, target);
}

}  // namespace dt::output::plot
