#include "core/outputs/plot_svg.hpp"

#include "core/outputs/plot_thin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dt::output::plot {

std::string xml_escape(const std::string& s) {
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

void SvgPlot::frame(const Panel& p, bool x_labels) {
  svg_ += fmt::format("<g id=\"{}\">\n", p.id);
  for (const auto& t : p.y.ticks) {
    const double y = py(p, t.value);
    svg_ += fmt::format("<line class=\"grid {}\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" "
                        "y2=\"{:.1f}\" stroke=\"{}\"/>\n",
                        t.label.empty() ? "minor" : "major", kLeft, kLeft + kPlotWidth, y, y,
                        t.label.empty() ? "#f0f0f0" : "#dddddd");
    if (!t.label.empty()) {
      svg_ += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}"
                          "</text>\n", kLeft - 6, y + 4, t.label);
    }
  }
  for (const auto& t : x_.ticks) {
    const double x = px(t.value);
    svg_ += fmt::format("<line class=\"grid major\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" "
                        "y2=\"{}\" stroke=\"#dddddd\"/>\n", x, x, p.top, p.top + p.height);
    if (x_labels) {
      svg_ += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" "
                          "text-anchor=\"middle\">{}</text>\n", x, p.top + p.height + 16,
                          t.label);
    }
  }
  svg_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                      "stroke=\"#888888\"/>\n", kLeft, p.top, kPlotWidth, p.height);
  const double ly = p.top + p.height / 2;
  svg_ += fmt::format("<text class=\"ylabel\" x=\"22\" y=\"{}\" text-anchor=\"middle\" "
                      "transform=\"rotate(-90 22 {})\">{}</text>\n", ly, ly, p.y_label);
  if (x_labels) {
    svg_ += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">"
                        "step</text>\n", kLeft + kPlotWidth / 2, p.top + p.height + 36);
  }
}

bool SvgPlot::curve(const Panel& p, const Series& s, std::size_t end, double column_width) {
  std::vector<Point> kept;
  ColumnThinner thinner(column_width, kept);
  for (std::size_t i = 0; i < end; ++i) {
    const auto& v = s.values[i];
    if (!v || !std::isfinite(*v) || (p.y.log && *v <= 0)) continue;
    thinner.add({px(static_cast<double>(rows_[i].step)), py(p, *v)});
  }
  thinner.finish();
  if (kept.empty()) return false;
  if (kept.size() == 1) {
    svg_ += fmt::format("<circle data-series=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" "
                        "fill=\"{}\"><title>{}</title></circle>\n", s.id, kept[0].x, kept[0].y,
                        s.color, xml_escape(s.label));
    return true;
  }
  std::string points;
  points.reserve(kept.size() * 12);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    fmt::format_to(std::back_inserter(points), "{}{:.1f},{:.1f}", i == 0 ? "" : " ", kept[i].x,
                   kept[i].y);
  }
  svg_ += fmt::format("<polyline data-series=\"{}\" fill=\"none\" stroke=\"{}\" "
                      "stroke-width=\"{}\" stroke-linejoin=\"round\" points=\"{}\">"
                      "<title>{}</title></polyline>\n",
                      s.id, s.color, s.width, points, xml_escape(s.label));
  return true;
}

void SvgPlot::marker(const Panel& p, const Marker& m) {
  const double x = px(static_cast<double>(m.step));
  svg_ += fmt::format("<line class=\"marker\" data-marker=\"{}\" data-step=\"{}\" x1=\"{:.1f}\" "
                      "x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}>"
                      "<title>{}</title></line>\n",
                      m.id, m.step, x, x, p.top, p.top + p.height, m.style->color,
                      m.style->width,
                      m.dash ? fmt::format(" stroke-dasharray=\"{}\"", m.dash) : std::string(),
                      xml_escape(m.style->label));
}

double SvgPlot::legend(double top, const std::vector<Entry>& entries) {
  if (entries.empty()) return 0;
  svg_ += "<g class=\"legend\">\n";
  double x = kLeft, y = top + kLegendLine / 2;
  for (const auto& e : entries) {
    const double w = legend_width(e);
    if (x > kLeft && x + w > kLeft + kPlotWidth) {
      x = kLeft;
      y += kLegendLine;
    }
    svg_ += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
                        "stroke-width=\"{}\"{}/>\n", x, x + 22, y, y, e.series->color,
                        std::max(2.0, e.series->width),
                        e.dash ? fmt::format(" stroke-dasharray=\"{}\"", e.dash) : std::string());
    svg_ += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x + 28, y + 4,
                        xml_escape(e.series->label));
    x += w;
  }
  svg_ += "</g>\n";
  return legend_height(entries);
}

double SvgPlot::legend_width(const Entry& e) {
  return 28 + 7 * static_cast<double>(e.series->label.size()) + 18;
}

double SvgPlot::legend_height(const std::vector<Entry>& entries) {
  if (entries.empty()) return 0;
  double x = kLeft, rows = 1;
  for (const auto& e : entries) {
    const double w = legend_width(e);
    if (x > kLeft && x + w > kLeft + kPlotWidth) {
      x = kLeft;
      ++rows;
    }
    x += w;
  }
  return rows * kLegendLine + 4;
}

}  // namespace dt::output::plot
