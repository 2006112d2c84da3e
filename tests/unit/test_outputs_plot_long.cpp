// loss.svg beyond the basics: long logs thinned to the pixel columns (plot_thin.hpp) with their
// spikes kept, early stopping's best step and stop, and the learning-rate panel.

#include "core/outputs/plot_scale.hpp"
#include "core/outputs/plot_svg.hpp"
#include "core/outputs/plot_thin.hpp"
#include "core/outputs/run_output.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using dt::output::plot::ColumnThinner;
using dt::output::plot::Point;

std::vector<Point> thinned(const std::vector<Point>& in, double width = 1) {
  std::vector<Point> out;
  ColumnThinner t(width, out);
  for (const auto& p : in) t.add(p);
  t.finish();
  return out;
}

std::vector<double> ys(const std::vector<Point>& points) {
  std::vector<double> out;
  for (const auto& p : points) out.push_back(p.y);
  return out;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The points="..." of the polyline of `series` (empty when there is none).
std::vector<std::string> polyline_points(const std::string& svg, const std::string& series) {
  const auto at = svg.find("<polyline data-series=\"" + series + "\"");
  if (at == std::string::npos) return {};
  const auto begin = svg.find("points=\"", at) + 8;
  const auto end = svg.find('"', begin);
  std::vector<std::string> out;
  std::size_t from = begin;
  while (from < end) {
    auto space = svg.find(' ', from);
    if (space == std::string::npos || space > end) space = end;
    out.push_back(svg.substr(from, space - from));
    from = space + 1;
  }
  return out;
}

// The y and height of the frame of the panel `id` (its <rect x="80" ...>).
std::pair<double, double> frame_of(const std::string& svg, const std::string& id) {
  const auto group = svg.find("<g id=\"" + id + "\">");
  REQUIRE(group != std::string::npos);
  const auto rect = svg.find("<rect x=\"80\" y=\"", group);
  REQUIRE(rect != std::string::npos);
  double y = 0, h = 0;
  REQUIRE(std::sscanf(svg.c_str() + rect, "<rect x=\"80\" y=\"%lf\" width=\"700\" height=\"%lf\"",
                      &y, &h) == 2);
  return {y, h};
}

dt::roles::RunResult classification_rows(int n, int every) {
  dt::roles::RunResult r;
  r.classes = {"0", "1"};
  for (int i = 1; i <= n; ++i) {
    dt::roles::LogRow row;
    row.step = static_cast<std::uint64_t>(i * every);
    row.train_loss = 1.0 / i;
    row.validation_loss = 1.0 / i + 0.01 * i;
    row.validation_metric = 0.5 + 0.01 * i;
    r.log.push_back(row);
  }
  return r;
}

}  // namespace

TEST_CASE("plot: the thinner keeps a column of 4 points whole, else its first, extremes, last") {
  // Columns 0 and 1 hold 4 points each: kept as they are.
  const std::vector<Point> few{{0.1, 5}, {0.2, 1}, {0.5, 9}, {0.9, 3}, {1.0, 2}, {1.5, 2},
                               {1.6, 2}, {1.7, 8}};
  const auto kept = thinned(few);
  CHECK(ys(kept) == ys(few));
  // Column 0 holds 7: first (4), lowest (1), highest (9, its first occurrence), last (6), in
  // that order; column 3 one point.
  const auto many = thinned({{0.0, 4}, {0.1, 9}, {0.2, 5}, {0.3, 1}, {0.4, 9}, {0.5, 1},
                             {0.6, 6}, {3.2, 7}});
  CHECK(ys(many) == std::vector<double>{4, 9, 1, 6, 7});
  CHECK(many[1].x == doctest::Approx(0.1));
  CHECK(many[2].x == doctest::Approx(0.3));
  // The first point is the extreme: kept once.
  CHECK(ys(thinned({{0, 0}, {0, 3}, {0, 2}, {0, 2}, {0, 1}})) == std::vector<double>{0, 3, 1});
  // Wider columns: 6 rising points are two columns of 3 at 1 px (all kept), one column of 6
  // at 2 px (the first, lowest, and the last, highest).
  const std::vector<Point> rising{{0, 1}, {0.3, 2}, {0.6, 3}, {1.0, 4}, {1.3, 5}, {1.6, 6}};
  CHECK(thinned(rising, 1).size() == 6);
  CHECK(ys(thinned(rising, 2)) == std::vector<double>{1, 6});
  CHECK(thinned({}).empty());
}

TEST_CASE("plot: a log of 10^6 rows makes a small SVG whose curve keeps its planted spikes") {
  constexpr std::uint64_t kRows = 1'000'000;
  constexpr std::uint64_t kSpike = 123'457, kDip = 765'433;
  dt::roles::RunResult run;
  run.log.reserve(kRows);
  std::vector<double> values;
  values.reserve(kRows);
  for (std::uint64_t s = 1; s <= kRows; ++s) {
    dt::roles::LogRow row;
    row.step = s;
    // A slow decline with deterministic noise, one spike up and one dip down a single row wide:
    // a curve that kept every k-th row would miss them.
    row.train_loss = 1.0 + 0.5 * std::sin(static_cast<double>(s) * 0.37) / (1 + s / 1e5);
    if (s == kSpike) row.train_loss = 40;
    if (s == kDip) row.train_loss = 0.02;
    values.push_back(row.train_loss);
    run.log.push_back(row);
  }
  const auto svg = dt::output::loss_svg(run, {"long", 1, false, {}});
  CHECK(svg.size() < 100'000);
  const auto points = polyline_points(svg, "train_loss");
  CHECK(points.size() > 700);
  CHECK(points.size() <= 4 * 701);
  // Where the spike and the dip fall: the panel's frame and the axes plot_scale.hpp gives.
  const auto [top, height] = frame_of(svg, "loss-panel");
  const auto y_axis = dt::output::plot::value_axis(values);
  CHECK(y_axis.log);  // 40 / 0.02: more than kLogRatio
  const auto x_axis = dt::output::plot::linear_axis(0, static_cast<double>(kRows), 8);
  const auto at = [&](std::uint64_t step, double v) {
    return fmt::format("{:.1f},{:.1f}", 80 + 700 * x_axis.fraction(static_cast<double>(step)),
                       top + height * (1 - y_axis.fraction(v)));
  };
  CHECK(std::find(points.begin(), points.end(), at(kSpike, 40)) != points.end());
  CHECK(std::find(points.begin(), points.end(), at(kDip, 0.02)) != points.end());
  CHECK(points.front() == at(1, values.front()));
  CHECK(points.back() == at(kRows, values.back()));
}

TEST_CASE("plot: every curve of a long log at once stays under 300 KB") {
  // Every row with every value (log_every 1 with validation), 32 workers drawn, a schedule:
  // the most a loss.svg can hold.
  dt::roles::RunResult run;
  run.classes = {"0", "1"};
  std::vector<double> lr;
  for (std::uint64_t s = 1; s <= 20'000; ++s) {
    const double t = static_cast<double>(s);
    dt::roles::LogRow row;
    row.step = s;
    row.train_loss = 1 + 0.1 * std::sin(t);
    row.validation_loss = 1 + 0.1 * std::sin(1.3 * t);
    row.validation_metric = 0.8 + 0.1 * std::sin(1.7 * t);
    row.validation_auc = 0.9 + 0.05 * std::sin(2.3 * t);
    for (int w = 0; w < 32; ++w) row.worker_loss.push_back(1 + 0.2 * std::sin(t * (1 + w)));
    run.log.push_back(row);
    lr.push_back(0.1 + 0.01 * std::sin(3.1 * t));
  }
  run.early_stopping = {{"metric", "val_loss"}, {"stopped_at", 20'000}, {"best_step", 15'000}};
  const auto svg = dt::output::loss_svg(run, {"everything", 1, true, lr});
  CHECK(occurrences(svg, "data-series=\"worker_") == 32);
  for (const char* s : {"train_loss", "validation_loss", "validation_accuracy", "validation_auc",
                        "lr"}) {
    const auto n = polyline_points(svg, s).size();
    CHECK(n > 2000);  // 28 rows a column: thinned to their first, extremes and last
    CHECK(n <= 4 * 701);
  }
  // 32 workers: columns 16 px wide.
  CHECK(polyline_points(svg, "worker_31_loss").size() <= 4 * (700 / 16 + 2));
  CHECK(svg.size() < 300'000);
}

TEST_CASE("plot: early stopping marks the best step and the stop in every panel") {
  auto run = classification_rows(12, 10);
  run.early_stopping = {{"metric", "val_loss"}, {"patience", 3}, {"min_delta", 0.0},
                        {"stopped_at", 120}, {"best_step", 90}, {"best_metric", 0.2}};
  const auto svg = dt::output::loss_svg(run, {"es", 10, false, {}});
  // The loss and the metric panel, each with both lines.
  CHECK(occurrences(svg, "data-marker=\"best_step\" data-step=\"90\"") == 2);
  CHECK(occurrences(svg, "data-marker=\"stopped_at\" data-step=\"120\"") == 2);
  CHECK(svg.find("best val_loss at step 90 (the model written)") != std::string::npos);
  CHECK(svg.find("early stop at step 120") != std::string::npos);
  // The line sits at the step on the x axis: 0 to 120 over 700 px.
  CHECK(svg.find("data-step=\"90\" x1=\"605.0\" x2=\"605.0\"") != std::string::npos);
  // A run that ran every step still marks its best check (the model written), and no stop.
  run.early_stopping["stopped_at"] = nullptr;
  const auto ran_out = dt::output::loss_svg(run, {"es", 10, false, {}});
  CHECK(occurrences(ran_out, "data-marker=\"best_step\"") == 2);
  CHECK(occurrences(ran_out, "data-marker=\"stopped_at\"") == 0);
  // No check made (best_step null), or no early stopping: no marker.
  run.early_stopping["best_step"] = nullptr;
  CHECK(occurrences(dt::output::loss_svg(run, {"es", 10, false, {}}), "marker") == 0);
  run.early_stopping = nullptr;
  CHECK(occurrences(dt::output::loss_svg(run, {"es", 10, false, {}}), "marker") == 0);
}

TEST_CASE("plot: with a schedule's rates, a learning-rate panel at the bottom, linear") {
  auto run = classification_rows(10, 10);
  std::vector<double> lr;
  for (int i = 0; i < 10; ++i) lr.push_back(0.1 * std::pow(0.5, i));  // 0.1 down to 0.0002
  const auto svg = dt::output::loss_svg(run, {"lr", 10, false, lr});
  REQUIRE(svg.find("<g id=\"lr-panel\">") != std::string::npos);
  const auto lr_group = svg.substr(svg.find("<g id=\"lr-panel\">"));
  CHECK(lr_group.find(">learning rate</text>") != std::string::npos);  // linear: no "(log scale)"
  CHECK(polyline_points(svg, "lr").size() == 10);
  // The x axis' labels and name only under the lowest panel.
  CHECK(occurrences(svg, "class=\"xlabel\"") == 1);
  CHECK(lr_group.find("class=\"xlabel\"") != std::string::npos);
  CHECK(occurrences(lr_group, "class=\"xtick\"") == occurrences(svg, "class=\"xtick\""));
  // The first rate at the panel's top tick (0.1), the last near its bottom (0).
  const auto [top, height] = frame_of(svg, "lr-panel");
  const auto points = polyline_points(svg, "lr");
  CHECK(points.front().substr(points.front().find(',') + 1) == fmt::format("{:.1f}", top));
  // Without rates, no panel; the loss and metric panels as before.
  const auto none = dt::output::loss_svg(run, {"lr", 10, false, {}});
  CHECK(none.find("lr-panel") == std::string::npos);
  CHECK(occurrences(none, "class=\"xlabel\"") == 1);
}
