// loss.svg: the training and validation loss against the step, below it the validation metric
// (accuracy and AUC, or MSE) and, with training.lr_schedule, the learning rate, as one
// self-contained SVG that any browser shows. The axes come from plot_scale.hpp (round ticks, a
// log scale when the range asks for it), the drawing from plot_svg.hpp (curves thinned to the
// pixel columns, so a log of 10^7 rows makes a plot as small as one of 3,000). The same rows give
// the same bytes: no clock, no randomness, fixed number formats.
//
// The last row of a run usually averages fewer steps than log_every (the steps since the last
// full window): its training loss is drawn apart, as a hollow marker on a dashed segment and
// named in the legend, so a short window is not read as a drop of the curve. Its validation loss
// is a full evaluation of the final parameters and is drawn as any other point.
//
// training.early_stopping: a dashed vertical line at the best check (the parameters model.json
// holds) and a dotted one where training stopped, across every panel, named in the loss legend.
//
// The learning rate has a panel of its own under the others rather than a second y axis on the
// loss panel: the loss axis is often logarithmic and the rate's is linear, and two scales on one
// frame make a reader match curves to axes. Its axis is always linear: schedules are read in
// linear terms (a warmup ramp, a cosine), and a cosine down to 0 has no place on a log axis.

#include "core/outputs/plot_scale.hpp"
#include "core/outputs/plot_svg.hpp"
#include "core/outputs/run_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

namespace dt::output {
namespace {

using plot::Entry;
using plot::kLeft;
using plot::kPlotWidth;
using plot::kTop;
using plot::Marker;
using plot::Panel;
using plot::Series;
using plot::SvgPlot;

constexpr double kLossHeight = 300, kLossAloneHeight = 340, kMetricHeight = 140, kGap = 12;
constexpr double kLrHeight = 100;
constexpr double kBottom = 48;  // x tick labels and the "step" label under the lowest panel
constexpr std::size_t kMaxWorkerLegend = 6;
constexpr const char* kWorkerColors[] = {"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                                         "#17becf", "#9467bd", "#2ca02c", "#d62728"};

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

// training.early_stopping's steps from summary.json's object (early_stop.hpp): none when the
// run has no early stopping or no check was made.
struct EarlyStop {
  std::string metric;
  std::optional<std::uint64_t> best_step, stopped_at;
};

EarlyStop early_stop_of(const nlohmann::json& j) {
  EarlyStop out;
  if (!j.is_object()) return out;
  const auto step = [&](const char* key) -> std::optional<std::uint64_t> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) {
      return std::nullopt;
    }
    return it->get<std::uint64_t>();
  };
  const auto metric = j.find("metric");
  out.metric = metric != j.end() && metric->is_string() ? metric->get<std::string>() : "metric";
  out.best_step = step("best_step");
  out.stopped_at = step("stopped_at");
  return out;
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

  // training.lr_schedule: each row's rate (loss.csv's lr column).
  Series lr{"lr", "learning rate (each row's last step)", "#8c564b", 2, {}};
  for (std::size_t i = 0; i < std::min(n, options.lr.size()); ++i) lr.values.emplace_back(options.lr[i]);
  const bool lr_panel = has_any(lr, lr.values.size());
  const EarlyStop stop = early_stop_of(result.early_stopping);
  Series best_style{"", stop.best_step ? fmt::format("best {} at step {} (the model written)",
                                                     stop.metric, *stop.best_step)
                                       : std::string(),
                    "#d62728", 2, {}};
  Series stop_style{"", stop.stopped_at ? fmt::format("early stop at step {}", *stop.stopped_at)
                                        : std::string(),
                    "#555555", 2, {}};
  std::vector<Marker> markers;
  if (stop.best_step) markers.push_back({"best_step", *stop.best_step, &best_style, "6 3"});
  if (stop.stopped_at) markers.push_back({"stopped_at", *stop.stopped_at, &stop_style, "2 3"});

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
  if (has_any(train, full)) entries.push_back({&train, nullptr});
  if (partial_drawn) entries.push_back({&partial, "4 3"});
  if (has_any(validation, n)) entries.push_back({&validation, nullptr});
  if (worker_series.size() > kMaxWorkerLegend) {
    entries.push_back({&many_workers, nullptr});
  } else {
    for (const auto& s : worker_series) {
      if (has_any(s, full)) entries.push_back({&s, nullptr});
    }
  }
  for (const auto& m : markers) entries.push_back({m.style, m.dash});
  std::vector<Entry> metric_entries;
  if (has_any(metric, n)) metric_entries.push_back({&metric, nullptr});
  if (has_any(auc, n)) metric_entries.push_back({&auc, nullptr});
  const std::vector<Entry> lr_entries{{&lr, nullptr}};

  std::vector<const Series*> loss_series{&train, &validation};
  for (const auto& s : worker_series) loss_series.push_back(&s);
  Panel loss{"loss-panel", kTop + SvgPlot::legend_height(entries),
             metric_panel || lr_panel ? kLossHeight : kLossAloneHeight,
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
  double bottom = metric_panel ? panel.top + panel.height : loss.top + loss.height;
  Panel rate{"lr-panel", 0, kLrHeight, plot::linear_axis(0, 1), "learning rate"};
  const double lr_legend_top = bottom + kGap;
  if (lr_panel) {
    const auto lr_values = finite_values({&lr}, lr.values.size());
    // From 0 (a rate is never below): the curve's height is proportional to the rate, so a
    // warmup from 0.1 x lr or a decay by 10 looks like one. Few ticks: the panel is short.
    rate.y = plot::linear_axis(0, *std::max_element(lr_values.begin(), lr_values.end()), 4);
    rate.top = lr_legend_top + SvgPlot::legend_height(lr_entries);
    bottom = rate.top + rate.height;
  }
  const double height = bottom + kBottom;

  SvgPlot plot(rows, x);
  std::string& svg = plot.out();
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text id=\"title\" x=\"{}\" y=\"24\" font-size=\"16\">{}</text>\n",
      plot::kWidth, height, plot::kWidth, height, kLeft, plot::xml_escape(options.title));
  plot.frame(loss, !metric_panel && !lr_panel);
  plot.legend(kTop, entries);
  for (const auto& m : markers) plot.marker(loss, m);
  // Workers first, so the merged curves are drawn over them. The workers' lines share the
  // thinning budget of 2 curves: their columns widen with their number.
  const double worker_columns = std::max(1.0, std::ceil(static_cast<double>(workers) / 2));
  for (const auto& s : worker_series) (void)plot.curve(loss, s, full, worker_columns);
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
    plot.frame(panel, !lr_panel);
    plot.legend(metric_legend_top, metric_entries);
    for (const auto& m : markers) plot.marker(panel, m);
    (void)plot.curve(panel, metric, n);
    (void)plot.curve(panel, auc, n);
    svg += "</g>\n";
  }
  if (lr_panel) {
    plot.frame(rate, true);
    plot.legend(lr_legend_top, lr_entries);
    for (const auto& m : markers) plot.marker(rate, m);
    (void)plot.curve(rate, lr, lr.values.size());
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dt::output
