#include "core/outputs/plot_thin.hpp"

#include <algorithm>
#include <cmath>

namespace dt::output::plot {

ColumnThinner::ColumnThinner(double column_width, std::vector<Point>& out)
    : column_width_(column_width > 0 ? column_width : 1), out_(out) {}

void ColumnThinner::add(Point p) {
  const auto column = static_cast<std::int64_t>(std::floor(p.x / column_width_));
  if (count_ > 0 && column != column_) flush();
  if (count_ == 0) {
    column_ = column;
    low_ = high_ = p;
    low_at_ = high_at_ = 0;
  } else {
    // Ties keep the earlier point: the same input, the same output.
    if (p.y < low_.y) {
      low_ = p;
      low_at_ = count_;
    }
    if (p.y > high_.y) {
      high_ = p;
      high_at_ = count_;
    }
  }
  if (count_ < held_.size()) held_[count_] = p;
  last_ = p;
  ++count_;
}

void ColumnThinner::finish() { flush(); }

void ColumnThinner::flush() {
  if (count_ <= held_.size()) {
    out_.insert(out_.end(), held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(count_));
    count_ = 0;
    return;
  }
  // The first, the extremes and the last, each once, in the order they came.
  struct Kept {
    std::size_t at;
    Point p;
  };
  std::array<Kept, 4> kept{{{0, held_[0]}, {low_at_, low_}, {high_at_, high_}, {count_ - 1, last_}}};
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) { return a.at < b.at; });
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i == 0 || kept[i].at != kept[i - 1].at) out_.push_back(kept[i].p);
  }
  count_ = 0;
}

}  // namespace dt::output::plot
