// loss.svg: the training and validation loss against the step, and below it the validation
// metric (accuracy and AUC, or MSE), as one self-contained SVG that any browser shows. The axes
// come from plot_scale.hpp (round ticks, a log scale when the range asks for it). The same
// rows give the same bytes: no clock, no randomness, fixed number formats.
//
// The last row of a run usually averages fewer steps than log_every (the steps since the last
// full window): its training loss is drawn apart, as a hollow marker on a dashed segment and
// named in the legend, so a short window is not read as a drop of the curve. Its validation loss
// is a full evaluation of the final parameters and is drawn as any other point.

#include "core/outputs/plot_scale.hpp"
#include "core/outputs/run_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace dt::output {
namespace {

constexpr double kWidth = 800, kLeft = 80, kRight = 20, kTop = 38, kLegendLine = 16;
constexpr double kLossHeight = 300, kLossAloneHeight = 340, kMetricHeight = 140, kGap = 12;
constexpr double kBottom = 48;  // x tick labels and the "step" label under the lowest panel
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr std::size_t kMaxWorkerLegend = 6;
constexpr const char* kWorkerColors[] = {"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                                         "#17becf", "#9467bd", "#2ca02c", "#d62728"};

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

// One curve: a value (or none) per loss-log row.
struct Series {
  std::string id;     // data-series="..." (what tests and scripts find it by)
  std::string label;  // the legend's text
  const char* color;
  double width;
  std::vector<std::optional<double>> values;
};

struct Entry {
  const Series* series;
  bool dashed;
};

struct Panel {
  std::string id;
  double top, height;
  plot::Axis y;
  std::string y_label;
};

class SvgPlot {
 public:
  SvgPlot(const std::vector<roles::LogRow>& rows, const plot::Axis& x) : rows_(rows), x_(x) {}

  std::string& out() { return svg_; }

  double px(double step) const { return kLeft + kPlotWidth * x_.fraction(step); }
  static double py(const Panel& p, double v) { return p.top + p.height * (1 - p.y.fraction(v)); }

  // The frame, the grid at every tick, the y tick labels and the y axis' name; the x tick
  // labels only when `x_labels` (the lowest panel).
  void frame(const Panel& p, bool x_labels) {
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

  // The polyline of rows [0, end); a lone point becomes a dot (a one-point polyline shows
  // nothing). False when it has no point.
  bool curve(const Panel& p, const Series& s, std::size_t end) {
    std::string points;
    std::size_t count = 0;
    for (std::size_t i = 0; i < end; ++i) {
      const auto& v = s.values[i];
      if (!v || !std::isfinite(*v) || (p.y.log && *v <= 0)) continue;
      points += fmt::format("{}{:.1f},{:.1f}", count == 0 ? "" : " ",
                            px(static_cast<double>(rows_[i].step)), py(p, *v));
      ++count;
    }
    if (count == 0) return false;
    if (count == 1) {
      const auto comma = points.find(',');
      svg_ += fmt::format("<circle data-series=\"{}\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\">"
                          "<title>{}</title></circle>\n", s.id, points.substr(0, comma),
                          points.substr(comma + 1), s.color, xml_escape(s.label));
      return true;
    }
    svg_ += fmt::format("<polyline data-series=\"{}\" fill=\"none\" stroke=\"{}\" "
                        "stroke-width=\"{}\" stroke-linejoin=\"round\" points=\"{}\">"
                        "<title>{}</title></polyline>\n",
                        s.id, s.color, s.width, points, xml_escape(s.label));
    return true;
  }

  // The legend: above its panel, never over a curve; entries left to right, wrapping into
  // rows of kLegendLine. Returns its height.
  double legend(double top, const std::vector<Entry>& entries) {
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
                          e.dashed ? " stroke-dasharray=\"4 3\"" : "");
      svg_ += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x + 28, y + 4,
                          xml_escape(e.series->label));
      x += w;
    }
    svg_ += "</g>\n";
    return legend_height(entries);
  }

  // The legend's height before it is drawn (the panel goes below it). The text's width is
  // estimated (7 px a character at font-size 12): the SVG has no layout engine to ask.
  static double legend_width(const Entry& e) {
    return 28 + 7 * static_cast<double>(e.series->label.size()) + 18;
  }
  static double legend_height(const std::vector<Entry>& entries) {
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

 private:
  const std::vector<roles::LogRow>& rows_;
  const plot::Axis& x_;
  std::string svg_;
};

std::vector<double> finite_values(const std::vector<const Series*>& series, std::size_t end) {
  std::vector<double> out;
  for (const Series* s : series) {
    for (std::size_t i = 0; i < std::min(end, s->values.size()); ++i) {
      if (s->values[i]) out.push_back(*s->values[i]);
    }
  }
  return out;
}

// Whether rows [0, end) give the series a point to draw.
bool has_any(const Series& s, std::size_t end) {
  return std::any_of(s.values.begin(), s.values.begin() + static_cast<std::ptrdiff_t>(end),
                     [](const auto& v) { return v && std::isfinite(*v); });
}

}  // namespace

std::string loss_svg(const roles::RunResult& result, const PlotOptions& options) {
  const auto& rows = result.log;
  const std::size_t n = rows.size();
  // The last row's window: the steps since the row before it. Shorter than log_every: drawn
  // apart (see the top of this file).
  const bool partial_last =
      n >= 2 && rows[n - 1].step - rows[n - 2].step < static_cast<std::uint64_t>(options.log_every);
  const std::size_t full = partial_last ? n - 1 : n;

  Series train{"train_loss", "train loss", "#1f77b4", 2, {}};
  Series validation{"validation_loss", "validation loss", "#ff7f0e", 2, {}};
  const bool classification = !result.classes.empty();
  Series metric{classification ? "validation_accuracy" : "validation_mse",
                classification ? "validation accuracy" : "validation MSE", "#2ca02c", 2, {}};
  Series auc{"validation_auc", "validation AUC", "#9467bd", 2, {}};
  std::size_t workers = 0;
  for (const auto& r : rows) {
    train.values.emplace_back(r.train_loss);
    validation.values.push_back(r.validation_loss);
    metric.values.push_back(r.validation_metric);
    auc.values.push_back(r.validation_auc);
    workers = std::max(workers, r.worker_loss.size());
  }
  std::vector<Series> worker_series;
  if (options.per_worker) {
    for (std::size_t w = 0; w < workers; ++w) {
      Series s{fmt::format("worker_{}_loss", w), fmt::format("worker {} loss", w),
               kWorkerColors[w % std::size(kWorkerColors)], 1, {}};
      for (const auto& r : rows) {
        s.values.push_back(w < r.worker_loss.size() ? std::optional(r.worker_loss[w])
                                                    : std::nullopt);
      }
      worker_series.push_back(std::move(s));
    }
  }

  const bool metric_panel = has_any(metric, n) || has_any(auc, n);
  std::uint64_t max_step = 1;
  for (const auto& r : rows) max_step = std::max(max_step, r.step);
  const plot::Axis x = plot::linear_axis(0, static_cast<double>(max_step), 8);

  // The legends' entries first: each legend sits above its panel and sets where it starts.
  const bool partial_drawn = partial_last && std::isfinite(rows[n - 1].train_loss);
  Series partial{"train_loss_partial",
                 partial_drawn ? fmt::format("train loss, last {} steps only",
                                             rows[n - 1].step - rows[n - 2].step)
                               : std::string(),
                 "#1f77b4", 2, {}};
  Series many_workers{"", fmt::format("workers 0-{} (hover a line for its rank)",
                                      workers == 0 ? 0 : workers - 1),
                      kWorkerColors[2], 1, {}};
  std::vector<Entry> entries;
  if (has_any(train, full)) entries.push_back({&train, false});
  if (partial_drawn) entries.push_back({&partial, true});
  if (has_any(validation, n)) entries.push_back({&validation, false});
  if (worker_series.size() > kMaxWorkerLegend) {
    entries.push_back({&many_workers, false});
  } else {
    for (const auto& s : worker_series) {
      if (has_any(s, full)) entries.push_back({&s, false});
    }
  }
  std::vector<Entry> metric_entries;
  if (has_any(metric, n)) metric_entries.push_back({&metric, false});
  if (has_any(auc, n)) metric_entries.push_back({&auc, false});

  std::vector<const Series*> loss_series{&train, &validation};
  for (const auto& s : worker_series) loss_series.push_back(&s);
  Panel loss{"loss-panel", kTop + SvgPlot::legend_height(entries),
             metric_panel ? kLossHeight : kLossAloneHeight,
             plot::value_axis(finite_values(loss_series, n)), "loss"};
  if (loss.y.log) loss.y_label = "loss (log scale)";
  // Accuracy and AUC stay linear (they live between 0 and 1); MSE follows the log rule.
  const auto metric_values = finite_values({&metric, &auc}, n);
  Panel panel{"metric-panel", 0, kMetricHeight, plot::value_axis(metric_values),
              classification ? (has_any(auc, n) ? "accuracy, AUC" : "accuracy") : "MSE"};
  if (classification && panel.y.log) {
    panel.y = plot::linear_axis(*std::min_element(metric_values.begin(), metric_values.end()),
                                *std::max_element(metric_values.begin(), metric_values.end()));
  }
  if (panel.y.log) panel.y_label = "MSE (log scale)";
  const double metric_legend_top = loss.top + loss.height + kGap;
  panel.top = metric_legend_top + SvgPlot::legend_height(metric_entries);
  const double height = (metric_panel ? panel.top + panel.height : loss.top + loss.height) + kBottom;

  SvgPlot plot(rows, x);
  std::string& svg = plot.out();
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text id=\"title\" x=\"{}\" y=\"24\" font-size=\"16\">{}</text>\n",
      kWidth, height, kWidth, height, kLeft, xml_escape(options.title));
  plot.frame(loss, !metric_panel);
  plot.legend(kTop, entries);
  // Workers first, so the merged curves are drawn over them.
  for (const auto& s : worker_series) (void)plot.curve(loss, s, full);
  (void)plot.curve(loss, validation, n);
  (void)plot.curve(loss, train, full);
  if (partial_drawn) {
    const auto& a = rows[n - 2];
    const auto& b = rows[n - 1];
    const double x2 = plot.px(static_cast<double>(b.step));
    const double y2 = SvgPlot::py(loss, b.train_loss);
    if (std::isfinite(a.train_loss)) {
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
                         "stroke=\"#1f77b4\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n",
                         plot.px(static_cast<double>(a.step)), SvgPlot::py(loss, a.train_loss),
                         x2, y2);
    }
    svg += fmt::format("<circle data-series=\"train_loss_partial\" cx=\"{:.1f}\" "
                       "cy=\"{:.1f}\" r=\"4\" fill=\"white\" stroke=\"#1f77b4\" "
                       "stroke-width=\"2\"><title>{}</title></circle>\n",
                       x2, y2, partial.label);
  }
  if (n == 0) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888888\">"
                       "no loss rows: the run stopped before its first log step</text>\n",
                       kLeft + kPlotWidth / 2, loss.top + loss.height / 2);
  }
  svg += "</g>\n";

  if (metric_panel) {
    plot.frame(panel, true);
    plot.legend(metric_legend_top, metric_entries);
    (void)plot.curve(panel, metric, n);
    (void)plot.curve(panel, auc, n);
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dt::output
