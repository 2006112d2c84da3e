// compare.hpp: a Comparison as `disttrain compare --json` prints it and as its readable table.

#include "core/outputs/compare.hpp"

#include "base/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace dt::output {

using nlohmann::ordered_json;

namespace {

ordered_json optional_number(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json optional_text(const std::optional<std::string>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

// b - a, and that over |a| (none when a is 0 or either is missing).
std::optional<double> delta_of(const MetricDelta& m) {
  if (!m.a || !m.b) return std::nullopt;
  return *m.b - *m.a;
}
std::optional<double> relative_delta_of(const MetricDelta& m) {
  if (!m.a || !m.b || *m.a == 0) return std::nullopt;
  return (*m.b - *m.a) / std::abs(*m.a);
}

ordered_json place_json(const std::optional<ParamDifference>& d) {
  if (!d) return {{"diff", 0.0}, {"tensor", nullptr}, {"index", nullptr}, {"a", nullptr}, {"b", nullptr}};
  return {{"diff", d->diff}, {"tensor", d->tensor}, {"index", d->index}, {"a", d->a}, {"b", d->b}};
}

ordered_json side_json(const RunSide& s) {
  return {{"dir", s.dir.string()}, {"status", s.status}, {"model", s.model_type},
          {"steps", s.steps}, {"has_model", s.has_model}};
}

std::string place_text(const ParamDifference& d) {
  std::string index;
  if (!d.index.empty()) index = fmt::format("[{}]", fmt::join(d.index, ", "));
  return fmt::format("{}{} (A {}, B {})", d.tensor, index, text::format_double(d.a), text::format_double(d.b));
}

std::string number_or_dash(const std::optional<double>& v, bool shortest = true) {
  if (!v) return "-";
  return shortest ? text::format_double(*v) : fmt::format("{:+.3g}", *v);
}

std::string model_lines(const Comparison& c) {
  const auto& m = c.model;
  if (!m.comparable) return fmt::format("model: not comparable: {}\n", m.reason);
  std::string out = fmt::format("model: {} ({} values, {} differ)\n", m.equal ? "equal" : "differs",
                                m.values, m.differing);
  if (m.max_abs) out += fmt::format("  largest abs diff {:.6g} at {}\n", m.max_abs->diff, place_text(*m.max_abs));
  if (m.max_rel) out += fmt::format("  largest rel diff {:.6g} at {}\n", m.max_rel->diff, place_text(*m.max_rel));
  if (m.differing == 0) return out;
  out += fmt::format("  {:<24} {:>14} {:>10} {:>14} {:>14}\n", "tensor", "shape", "differ",
                     "max abs diff", "max rel diff");
  for (const auto& t : m.tensors) {
    out += fmt::format("  {:<24} {:>14} {:>10} {:>14.6g} {:>14.6g}\n", t.name,
                       fmt::format("[{}]", fmt::join(t.shape, ",")), t.differing, t.max_abs.diff,
                       t.max_rel.diff);
  }
  return out;
}

std::string timing_lines(const Comparison& c) {
  std::string out = fmt::format("timing:{:<25} {:>14} {:>14}\n", "", "A", "B");
  const auto cell = [](const ordered_json& v) {
    return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : std::string("-");
  };
  for (const auto& [key, v] : c.timing.run.items()) {
    out += fmt::format("  {:<30} {:>14} {:>14}\n", key, cell(v["a"]), cell(v["b"]));
  }
  const auto field = [&](const ordered_json& side, const char* key, const char* sub = nullptr) {
    if (!side.is_object() || !side.contains(key)) return std::string("-");
    return cell(sub == nullptr ? side[key] : side[key].value(sub, ordered_json()));
  };
  for (const auto& w : c.timing.workers) {
    const auto rank = w["rank"].get<std::int64_t>();
    const auto row = [&](const char* label, const char* key, const char* sub) {
      out += fmt::format("  {:<30} {:>14} {:>14}\n", fmt::format("worker {} {}", rank, label),
                         field(w["a"], key, sub), field(w["b"], key, sub));
    };
    row("load_seconds", "load_seconds", nullptr);
    row("compute_seconds", "compute_seconds", nullptr);
    row("comm_seconds", "comm_seconds", nullptr);
    row("step_seconds p50", "step_seconds", "p50");
  }
  return out;
}

}  // namespace

ordered_json comparison_json(const Comparison& c) {
  ordered_json j;
  j["equal"] = c.equal;
  j["tolerance"] = c.tolerance;
  j["a"] = side_json(c.a);
  j["b"] = side_json(c.b);
  ordered_json config = ordered_json::array();
  for (const auto& d : c.config) {
    config.push_back({{"key", d.key}, {"a", optional_text(d.a)}, {"b", optional_text(d.b)}});
  }
  j["config_differences"] = config;
  ordered_json metrics = ordered_json::array();
  for (const auto& m : c.metrics) {
    metrics.push_back({{"name", m.name}, {"a", optional_number(m.a)}, {"b", optional_number(m.b)},
                       {"delta", optional_number(delta_of(m))},
                       {"relative_delta", optional_number(relative_delta_of(m))}, {"equal", m.equal}});
  }
  j["metrics"] = {{"equal", c.metrics_equal}, {"values", metrics}};
  const auto& m = c.model;
  ordered_json model = {{"comparable", m.comparable}, {"equal", m.equal},
                        {"reason", m.reason.empty() ? ordered_json(nullptr) : ordered_json(m.reason)},
                        {"values", m.values}, {"differing", m.differing},
                        {"max_abs_diff", place_json(m.max_abs)}, {"max_rel_diff", place_json(m.max_rel)}};
  ordered_json tensors = ordered_json::array();
  for (const auto& t : m.tensors) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"sparse", t.sparse},
                       {"differing", t.differing},
                       {"max_abs_diff", place_json(t.max_abs.diff > 0 ? std::optional(t.max_abs) : std::nullopt)},
                       {"max_rel_diff", place_json(t.max_rel.diff > 0 ? std::optional(t.max_rel) : std::nullopt)}});
  }
  model["tensors"] = tensors;
  j["model"] = model;
  const auto& l = c.loss;
  j["loss"] = {{"rows_a", l.rows_a}, {"rows_b", l.rows_b},
               {"divergence_step", l.divergence_step ? ordered_json(*l.divergence_step) : ordered_json(nullptr)},
               {"column", l.divergence_step ? ordered_json(l.column) : ordered_json(nullptr)},
               {"a", l.divergence_step ? ordered_json(l.a_value) : ordered_json(nullptr)},
               {"b", l.divergence_step ? ordered_json(l.b_value) : ordered_json(nullptr)}};
  j["timing"] = {{"run", c.timing.run}, {"workers", c.timing.workers}};
  return j;
}

std::string comparison_text(const Comparison& c) {
  std::string out;
  out += fmt::format("A: {}  ({}, {}, {} steps)\n", c.a.dir.string(), c.a.status, c.a.model_type, c.a.steps);
  out += fmt::format("B: {}  ({}, {}, {} steps)\n", c.b.dir.string(), c.b.status, c.b.model_type, c.b.steps);
  out += fmt::format("\nconfig: {}\n", c.config.empty() ? "the same"
                                                        : fmt::format("{} keys differ", c.config.size()));
  for (const auto& d : c.config) {
    out += fmt::format("  {:<36} {:>20} {:>20}\n", d.key, d.a.value_or("(absent)"), d.b.value_or("(absent)"));
  }
  out += fmt::format("\nfinal metrics: {}\n", c.metrics_equal ? "equal" : "differ");
  out += fmt::format("  {:<32} {:>22} {:>22} {:>10} {:>10}\n", "", "A", "B", "B - A", "relative");
  for (const auto& m : c.metrics) {
    out += fmt::format("  {:<32} {:>22} {:>22} {:>10} {:>10}{}\n", m.name, number_or_dash(m.a),
                       number_or_dash(m.b), number_or_dash(delta_of(m), false),
                       number_or_dash(relative_delta_of(m), false), m.equal ? "" : "  differs");
  }
  out += '\n';
  out += model_lines(c);
  const auto& l = c.loss;
  if (l.divergence_step) {
    out += fmt::format("\nloss curves: diverge at step {} ({}: A {}, B {}); {} and {} rows\n",
                       *l.divergence_step, l.column, l.a_value.empty() ? "-" : l.a_value,
                       l.b_value.empty() ? "-" : l.b_value, l.rows_a, l.rows_b);
  } else {
    out += fmt::format("\nloss curves: the same ({} rows)\n", l.rows_a);
  }
  out += '\n';
  out += timing_lines(c);
  std::string verdict = "equal";
  if (!c.equal) {
    std::vector<std::string> what;
    if (!c.model.equal) what.push_back(c.model.comparable ? "the models differ" : c.model.reason);
    if (!c.metrics_equal) what.push_back("the final metrics differ");
    verdict = fmt::format("differ: {}", fmt::join(what, "; "));
  }
  out += fmt::format("\nresult: {} (tolerance {})\n", verdict, text::format_double(c.tolerance));
  return out;
}

}  // namespace dt::output
