#pragma once
// loss.svg's drawing: panels (a frame, grid lines at the ticks, axis names), curves (one
// polyline each, thinned to the plot's pixel columns: plot_thin.hpp), legends and vertical
// markers, written as SVG text. plot.cpp lays the panels out and picks what goes in them.
// Fixed number formats and no clock: the same calls give the same bytes.

#include "core/coordinator/result.hpp"
#include "core/outputs/plot_scale.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dt::output::plot {

inline constexpr double kWidth = 800, kLeft = 80, kRight = 20, kTop = 38, kLegendLine = 16;
inline constexpr double kPlotWidth = kWidth - kLeft - kRight;

[[nodiscard]] std::string xml_escape(const std::string& s);

// One curve: a value (or none) per loss-log row.
struct Series {
  std::string id;     // data-series="..." (what tests and scripts find it by)
  std::string label;  // the legend's text
  const char* color;
  double width;
  std::vector<std::optional<double>> values;
};

// A legend line: its series' colour and label, drawn solid (dash nullptr) or with this
// stroke-dasharray.
struct Entry {
  const Series* series;
  const char* dash;
};

struct Panel {
  std::string id;
  double top, height;
  Axis y;
  std::string y_label;
};

// A vertical line across panels at a step (early stopping's best step and stop).
struct Marker {
  std::string id;     // data-marker="..."
  std::uint64_t step;
  const Series* style;  // its colour, width and label (the <title>)
  const char* dash;
};

class SvgPlot {
 public:
  SvgPlot(const std::vector<roles::LogRow>& rows, const Axis& x) : rows_(rows), x_(x) {}

  std::string& out() { return svg_; }

  [[nodiscard]] double px(double step) const { return kLeft + kPlotWidth * x_.fraction(step); }
  [[nodiscard]] static double py(const Panel& p, double v) {
    return p.top + p.height * (1 - p.y.fraction(v));
  }

  // The frame, the grid at every tick, the y tick labels and the y axis' name; the x tick
  // labels only when `x_labels` (the lowest panel).
  void frame(const Panel& p, bool x_labels);
  // The polyline of rows [0, end), thinned to columns `column_width` px wide; a lone point
  // becomes a dot (a one-point polyline shows nothing). False when it has no point.
  bool curve(const Panel& p, const Series& s, std::size_t end, double column_width = 1);
  // A vertical line from the panel's top to its bottom at the marker's step.
  void marker(const Panel& p, const Marker& m);
  // The legend: above its panel, never over a curve; entries left to right, wrapping into
  // rows of kLegendLine. Returns its height.
  double legend(double top, const std::vector<Entry>& entries);
  // The legend's height before it is drawn (the panel goes below it). The text's width is
  // estimated (7 px a character at font-size 12): the SVG has no layout engine to ask.
  [[nodiscard]] static double legend_width(const Entry& e);
  [[nodiscard]] static double legend_height(const std::vector<Entry>& entries);

 private:
  const std::vector<roles::LogRow>& rows_;
  const Axis& x_;
  std::string svg_;
};

}  // namespace dt::output::plot
