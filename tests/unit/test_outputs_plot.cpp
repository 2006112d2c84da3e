// loss.svg's axes (plot_scale.hpp): round ticks, the log rule; and the SVG's partial last window.

#include "core/outputs/plot_scale.hpp"
#include "core/outputs/run_output.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

std::vector<std::string> labels(const dt::output::plot::Axis& axis) {
  std::vector<std::string> out;
  for (const auto& t : axis.ticks) {
    if (!t.label.empty()) out.push_back(t.label);
  }
  return out;
}

dt::roles::RunResult rows_at(const std::vector<std::uint64_t>& steps) {
  dt::roles::RunResult r;
  for (auto s : steps) {
    dt::roles::LogRow row;
    row.step = s;
    row.train_loss = 1.0 / static_cast<double>(s);
    r.log.push_back(row);
  }
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("plot: nice steps are 1, 2 or 5 times a power of ten") {
  using dt::output::plot::nice_step;
  CHECK(nice_step(1.0, 6) == doctest::Approx(0.2));
  CHECK(nice_step(0.02682, 6) == doctest::Approx(0.005));
  CHECK(nice_step(8442, 8) == doctest::Approx(1000));
  CHECK(nice_step(3, 6) == doctest::Approx(0.5));
}

TEST_CASE("plot: a linear axis ends on ticks, each an exact multiple of the step") {
  // The example: a loss from 0.009318 to 0.03602.
  const auto axis = dt::output::plot::linear_axis(0.009318, 0.03602);
  CHECK(labels(axis) == std::vector<std::string>{"0.005", "0.010", "0.015", "0.020", "0.025",
                                                 "0.030", "0.035", "0.040"});
  CHECK(axis.lo == doctest::Approx(0.005));
  CHECK(axis.hi == doctest::Approx(0.04));
  CHECK(labels(dt::output::plot::linear_axis(0, 8442, 8)) ==
        std::vector<std::string>{"0", "1000", "2000", "3000", "4000", "5000", "6000", "7000",
                                 "8000", "9000"});
  // A constant series still gets a range around it.
  CHECK(labels(dt::output::plot::linear_axis(0.5, 0.5)) ==
        std::vector<std::string>{"0.44", "0.46", "0.48", "0.50", "0.52", "0.54", "0.56"});
}

TEST_CASE("plot: the value axis is logarithmic above kLogRatio, all values positive") {
  using dt::output::plot::value_axis;
  CHECK_FALSE(value_axis({0.02, 1.0}).log);  // a ratio of exactly 50
  const auto log = value_axis({0.0093, 0.6, 2.5});
  REQUIRE(log.log);
  CHECK(log.lo == doctest::Approx(0.001));
  CHECK(log.hi == doctest::Approx(10));
  CHECK(labels(log) == std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10"});
  CHECK(log.ticks.size() == 4 * 9 + 1);  // minor ticks at 2..9 of each decade
  CHECK_FALSE(value_axis({0.0, 0.5, 100.0}).log);  // a zero: no log
  CHECK(labels(value_axis({0.011, 0.9})) ==
        std::vector<std::string>{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"});
  CHECK(labels(dt::output::plot::log_axis(2e-8, 3e-6)) ==
        std::vector<std::string>{"1e-08", "1e-07", "1e-06", "1e-05"});
}

TEST_CASE("plot: the last row's partial window is drawn apart, a full one is not") {
  // log_every 10 and a run of 25 steps: rows at 10, 20 and 25 (5 steps only).
  const auto partial = dt::output::loss_svg(rows_at({10, 20, 25}), {"t", 10, false});
  CHECK(count(partial, "data-series=\"train_loss_partial\"") == 1);
  CHECK(partial.find("train loss, last 5 steps only") != std::string::npos);
  CHECK(count(partial, "data-series=\"train_loss\"") == 1);
  const auto whole = dt::output::loss_svg(rows_at({10, 20, 30}), {"t", 10, false});
  CHECK(count(whole, "train_loss_partial") == 0);
  // Same rows, same bytes.
  CHECK(whole == dt::output::loss_svg(rows_at({10, 20, 30}), {"t", 10, false}));
}

TEST_CASE("plot: per-worker curves only when asked, the title escaped") {
  auto run = rows_at({10, 20});
  for (auto& row : run.log) row.worker_loss = {0.5, 0.7};
  const auto off = dt::output::loss_svg(run, {"a<b", 10, false});
  CHECK(count(off, "worker_") == 0);
  CHECK(off.find("a&lt;b") != std::string::npos);
  const auto on = dt::output::loss_svg(run, {"a<b", 10, true});
  CHECK(count(on, "data-series=\"worker_0_loss\"") == 1);
  CHECK(count(on, "data-series=\"worker_1_loss\"") == 1);
}

TEST_CASE("plot: output.plot.per_worker parses and survives the resolved config") {
  const char* base = "version: 1\ndata: {synthetic: {kind: linear}}\n";
  const auto off = dt::test::parse_text(base);
  CHECK_FALSE(off.output.plot_per_worker);
  CHECK(dt::config::to_yaml(off).find("  plot:\n    per_worker: false\n") != std::string::npos);
  const auto on = dt::test::parse_text(std::string(base) + "output: {plot: {per_worker: true}}\n");
  CHECK(on.output.plot_per_worker);
  const auto again = dt::test::parse_text(dt::config::to_yaml(on));
  CHECK(again.output.plot_per_worker);
}
