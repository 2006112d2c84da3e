#pragma once
// loss.svg's curves for long logs: a run logged at every step for 10^6 steps must not give an
// SVG of 10^6 points per curve (tens of megabytes, seconds to write, a browser that chokes), and
// the curve must still show the spikes a plain "every k-th row" would skip. The points of a
// curve, in drawing order, fall in pixel columns (`column_width` px wide); of each run of points
// in one column, the thinner keeps the first, the lowest, the highest and the last, in their
// order: the polyline a browser rasterizes from them covers the same pixels of that column as
// the whole run would, and the lines into the next column start where they did. A column that
// holds 4 points or fewer keeps them all, so a log with at most about 4 rows a pixel column (the
// plot is 700 px wide: every log of up to ~2,800 rows) is drawn exactly as it was before
// thinning existed. At most 4 points a column: a curve never has more than 4 x (columns + 1)
// points, whatever the log's length. Deterministic: the same points give the same output.
// Not thread-safe; one per curve.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::output::plot {

struct Point {
  double x = 0, y = 0;  // pixels
};

class ColumnThinner {
 public:
  // Appends the kept points to `out` (which must outlive the thinner).
  ColumnThinner(double column_width, std::vector<Point>& out);

  void add(Point p);
  // Emits the last column's points; call once after the last add().
  void finish();

 private:
  void flush();

  double column_width_;
  std::vector<Point>& out_;
  std::int64_t column_ = 0;
  std::size_t count_ = 0;  // points in the current column
  std::array<Point, 4> held_{};  // the column's first 4 points (all of them when count_ <= 4)
  Point low_{}, high_{}, last_{};
  std::size_t low_at_ = 0, high_at_ = 0;  // their order in the column (the first: 0)
};

}  // namespace dt::output::plot
