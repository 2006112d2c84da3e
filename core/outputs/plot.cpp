// loss.svg: the training and validation loss against the step, as a self-contained SVG that any
// browser shows. A log scale is used when the loss spans more than two decades.

#include "core/outputs/run_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dt::output {
namespace {

constexpr double kWidth = 800, kHeight = 450;
constexpr double kLeft = 80, kRight = 20, kTop = 40, kBottom = 50;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string loss_svg(const roles::RunResult& result, const std::string& title) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::uint64_t max_step = 1;
  for (const auto& row : result.log) {
    for (auto v : {std::optional<double>(row.train_loss), row.validation_loss}) {
      if (v && std::isfinite(*v)) {
        lo = std::min(lo, *v);
        hi = std::max(hi, *v);
      }
    }
    max_step = std::max(max_step, row.step);
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  const bool log_scale = lo > 0 && hi / lo > 100;
  const auto tr = [&](double v) { return log_scale ? std::log10(v) : v; };
  double ylo = tr(lo), yhi = tr(hi);
  if (yhi - ylo < 1e-12) yhi = ylo + 1;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const auto px = [&](double step) { return kLeft + pw * step / static_cast<double>(max_step); };
  const auto py = [&](double v) { return kTop + ph * (1 - (tr(v) - ylo) / (yhi - ylo)); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"16\">{} loss{}</text>\n",
      kWidth, kHeight, kLeft, escape(title), log_scale ? " (log scale)" : "");
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                     "stroke=\"#888\"/>\n", kLeft, kTop, pw, ph);
  for (int i = 0; i <= 4; ++i) {
    const double t = ylo + (yhi - ylo) * i / 4.0;
    const double value = log_scale ? std::pow(10.0, t) : t;
    const double y = kTop + ph * (1 - i / 4.0);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.4g}</text>\n",
                       kLeft - 6, y + 4, value);
    const double step = static_cast<double>(max_step) * i / 4.0;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f}</text>\n",
                       px(step), kTop + ph + 18, step);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n",
                     kLeft + pw / 2, kHeight - 10);
  const auto line = [&](auto value_of, const char* color, const char* name, double legend_y) {
    std::string points;
    for (const auto& row : result.log) {
      const std::optional<double> v = value_of(row);
      if (!v || !std::isfinite(*v) || (log_scale && *v <= 0)) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(row.step)), py(*v));
    }
    if (points.empty()) return;
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       color, points);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", kWidth - kRight - 120,
                       legend_y, color, name);
  };
  line([](const roles::LogRow& r) { return std::optional<double>(r.train_loss); }, "#1f77b4",
       "train loss", kTop + 16);
  line([](const roles::LogRow& r) { return r.validation_loss; }, "#ff7f0e", "validation loss",
       kTop + 32);
  svg += "</svg>\n";
  return svg;
}

}  // namespace dt::output
