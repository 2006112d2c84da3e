// compare.hpp: reading two run folders and comparing their configs, final metrics, loss curves
// and timing (the models: compare_model.cpp; the printed forms: compare_report.cpp).

#include "core/outputs/compare.hpp"

#include "base/error.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <map>

namespace dt::output {

namespace {

// config.resolved.yaml as flattened keys and scalar text, in document order.
using FlatConfig = std::vector<std::pair<std::string, std::string>>;

void flatten_yaml(const YAML::Node& node, const std::string& key, FlatConfig& out) {
  if (node.IsMap()) {
    if (node.size() == 0) out.emplace_back(key, "{}");
    for (const auto& kv : node) {
      const auto name = kv.first.as<std::string>();
      flatten_yaml(kv.second, key.empty() ? name : key + "." + name, out);
    }
  } else if (node.IsSequence()) {
    if (node.size() == 0) out.emplace_back(key, "[]");
    for (std::size_t i = 0; i < node.size(); ++i) flatten_yaml(node[i], fmt::format("{}[{}]", key, i), out);
  } else if (node.IsScalar()) {
    out.emplace_back(key, node.Scalar());
  } else {
    out.emplace_back(key, "null");
  }
}

FlatConfig flat_config(std::string_view text, const std::filesystem::path& origin) {
  FlatConfig out;
  try {
    flatten_yaml(YAML::Load(std::string(text)), "", out);
  } catch (const YAML::Exception& e) {
    fail<DataError>("{}: not YAML ({}); the run folder's config copy is damaged: run the "
                    "training again to rewrite it",
                    origin.string(), e.what());
  }
  return out;
}

std::optional<double> metric_value(const nlohmann::json& summary, const std::string& name) {
  const auto dot = name.find('.');
  const nlohmann::json* v = nullptr;
  if (dot == std::string::npos) {
    if (summary.contains(name)) v = &summary[name];
  } else {
    const auto object = name.substr(0, dot);
    const auto field = name.substr(dot + 1);
    if (summary.contains(object) && summary[object].is_object() && summary[object].contains(field)) {
      v = &summary[object][field];
    }
  }
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

void metric_names(const nlohmann::json& summary, std::vector<std::string>& names) {
  const auto add = [&](std::string name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  };
  if (summary.contains("final_loss")) add("final_loss");
  for (const char* object : {"final_metrics", "validation"}) {
    if (!summary.contains(object) || !summary[object].is_object()) continue;
    for (const auto& [field, value] : summary[object].items()) add(fmt::format("{}.{}", object, field));
  }
}

// loss.csv: its header and rows of cells.
struct LossTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  [[nodiscard]] std::optional<std::size_t> column(std::string_view name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    return std::nullopt;
  }
};

std::vector<std::string> csv_cells(std::string_view line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    cells.emplace_back(line.substr(start, comma - start));
    if (comma == std::string_view::npos) return cells;
    start = comma + 1;
  }
}

LossTable loss_table(std::string_view text, const std::filesystem::path& origin) {
  LossTable t;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto cells = csv_cells(text.substr(start, end - start));
    if (t.header.empty()) {
      t.header = std::move(cells);
    } else {
      t.rows.push_back(std::move(cells));
    }
    start = end + 1;
  }
  if (!t.column("step") || !t.column("train_loss")) {
    fail<DataError>("{}: no step and train_loss columns in its first line; this is not a loss.csv "
                    "that disttrain wrote: run the training again to rewrite it",
                    origin.string());
  }
  return t;
}

std::string cell(const LossTable& t, std::size_t row, std::optional<std::size_t> column) {
  if (!column || *column >= t.rows[row].size()) return "";
  return t.rows[row][*column];
}

double cell_number(const std::string& text, const std::filesystem::path& origin, std::size_t row) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    fail<DataError>("{}: line {}: '{}' is not a number; this is not a loss.csv that disttrain "
                    "wrote: run the training again to rewrite it",
                    origin.string(), row + 2, text);
  }
  return v;
}

// A step cell: a whole number (a cast of 1e300 or nan would be undefined).
std::int64_t step_number(const std::string& text, const std::filesystem::path& origin, std::size_t row) {
  const double v = cell_number(text, origin, row);
  if (!(v >= 0 && v < 9.0e18) || v != std::floor(v)) {
    fail<DataError>("{}: line {}: step '{}' is not a whole number; this is not a loss.csv that "
                    "disttrain wrote: run the training again to rewrite it",
                    origin.string(), row + 2, text);
  }
  return static_cast<std::int64_t>(v);
}

std::string read_run_file(const std::filesystem::path& path) {
  try {
    return files::read_all(path);
  } catch (const files::UnreadableFile& e) {
    fail<DataError>("{}; check the run folder's permissions, or run the training again", e.what());
  }
}

nlohmann::json read_summary(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    fail<DataError>("{}: no such folder; give two run folders, the output.dir of `disttrain run` "
                    "(runs/<name>, or runs/<name>.prev for the run before)",
                    dir.string());
  }
  const auto path = dir / "summary.json";
  if (!std::filesystem::exists(path, ec)) {
    fail<DataError>("{} is not a run folder: it has no summary.json (a run writes it when it "
                    "ends; one killed outright leaves none); give the output.dir of a finished "
                    "`disttrain run`",
                    dir.string());
  }
  const auto text = read_run_file(path);
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_object()) fail<DataError>("{}: not a JSON object", path.string());
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    fail<DataError>("{}: not JSON ({}); the summary is damaged: run the training again to "
                    "rewrite it",
                    path.string(), e.what());
  }
}

RunSide run_side(const std::filesystem::path& dir, const nlohmann::json& summary) {
  RunSide side;
  side.dir = dir;
  side.status = summary.value("status", "");
  side.model_type = summary.value("model", "");
  if (summary.contains("steps") && summary["steps"].is_number_integer()) {
    side.steps = summary["steps"].get<std::int64_t>();
  }
  side.has_model = std::filesystem::exists(dir / "model.json");
  return side;
}

}  // namespace

std::vector<ConfigDifference> config_differences(std::string_view a_text, std::string_view b_text,
                                                 const std::filesystem::path& origin_a,
                                                 const std::filesystem::path& origin_b) {
  const auto a = flat_config(a_text, origin_a);
  const auto b = flat_config(b_text, origin_b);
  const std::map<std::string, std::string> b_values(b.begin(), b.end());
  std::map<std::string, bool> in_a;
  std::vector<ConfigDifference> out;
  for (const auto& [key, value] : a) {
    in_a[key] = true;
    const auto it = b_values.find(key);
    if (it == b_values.end()) {
      out.push_back({key, value, std::nullopt});
    } else if (it->second != value) {
      out.push_back({key, value, it->second});
    }
  }
  for (const auto& [key, value] : b) {
    if (!in_a.contains(key)) out.push_back({key, std::nullopt, value});
  }
  return out;
}

std::vector<MetricDelta> metric_deltas(const nlohmann::json& summary_a, const nlohmann::json& summary_b,
                                       double tolerance) {
  std::vector<std::string> names;
  metric_names(summary_a, names);
  metric_names(summary_b, names);
  std::vector<MetricDelta> out;
  for (const auto& name : names) {
    MetricDelta m{name, metric_value(summary_a, name), metric_value(summary_b, name), false};
    m.equal = (!m.a && !m.b) || (m.a && m.b && equal_within(*m.a, *m.b, tolerance));
    out.push_back(std::move(m));
  }
  return out;
}

LossComparison compare_losses(std::string_view a_text, std::string_view b_text, double tolerance,
                              const std::filesystem::path& origin_a,
                              const std::filesystem::path& origin_b) {
  const auto a = loss_table(a_text, origin_a);
  const auto b = loss_table(b_text, origin_b);
  LossComparison c;
  c.rows_a = a.rows.size();
  c.rows_b = b.rows.size();
  const auto diverge = [&](std::int64_t step, std::string column, std::string va, std::string vb) {
    c.divergence_step = step;
    c.column = std::move(column);
    c.a_value = std::move(va);
    c.b_value = std::move(vb);
  };
  const std::size_t common = std::min(a.rows.size(), b.rows.size());
  for (std::size_t r = 0; r < common; ++r) {
    const auto sa = step_number(cell(a, r, a.column("step")), origin_a, r);
    const auto sb = step_number(cell(b, r, b.column("step")), origin_b, r);
    if (sa != sb) {
      diverge(std::min(sa, sb), "step", std::to_string(sa), std::to_string(sb));
      return c;
    }
    for (const char* column : {"train_loss", "validation_loss"}) {
      const auto va = cell(a, r, a.column(column));
      const auto vb = cell(b, r, b.column(column));
      if (va.empty() && vb.empty()) continue;
      if (va.empty() || vb.empty() ||
          !equal_within(cell_number(va, origin_a, r), cell_number(vb, origin_b, r), tolerance)) {
        diverge(sa, column, va, vb);
        return c;
      }
    }
  }
  // One curve goes on where the other ends (a shorter run, an early stop).
  if (a.rows.size() != b.rows.size()) {
    const auto& longer = a.rows.size() > b.rows.size() ? a : b;
    const auto& origin = a.rows.size() > b.rows.size() ? origin_a : origin_b;
    const auto step = cell(longer, common, longer.column("step"));
    diverge(step_number(step, origin, common), "step",
            a.rows.size() > common ? step : "", b.rows.size() > common ? step : "");
  }
  return c;
}

Timing compare_timing(const nlohmann::json& summary_a, const nlohmann::json& summary_b) {
  Timing t;
  t.run = nlohmann::ordered_json::object();
  for (const char* key : {"wall_seconds", "train_seconds", "samples_per_second"}) {
    t.run[key] = {{"a", summary_a.value(key, nlohmann::json())},
                  {"b", summary_b.value(key, nlohmann::json())}};
  }
  // Per rank, the fields that say where a worker's time went.
  std::map<std::int64_t, nlohmann::ordered_json> ranks;
  const auto collect = [&](const nlohmann::json& summary, const char* side) {
    if (!summary.contains("worker_stats") || !summary["worker_stats"].is_array()) return;
    for (const auto& w : summary["worker_stats"]) {
      if (!w.is_object() || !w.contains("rank") || !w["rank"].is_number_integer()) continue;
      nlohmann::ordered_json fields = nlohmann::ordered_json::object();
      for (const char* key : {"steps", "load_seconds", "compute_seconds", "comm_seconds",
                              "step_seconds", "bytes_sent", "bytes_received", "max_rss_bytes"}) {
        if (w.contains(key)) fields[key] = w[key];
      }
      auto& entry = ranks[w["rank"].get<std::int64_t>()];
      if (entry.is_null()) entry = {{"a", nullptr}, {"b", nullptr}};
      entry[side] = fields;
    }
  };
  collect(summary_a, "a");
  collect(summary_b, "b");
  t.workers = nlohmann::ordered_json::array();
  for (auto& [rank, entry] : ranks) {
    nlohmann::ordered_json w = {{"rank", rank}};
    w["a"] = entry["a"];
    w["b"] = entry["b"];
    t.workers.push_back(std::move(w));
  }
  return t;
}

Comparison compare_runs(const std::filesystem::path& a, const std::filesystem::path& b, double tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  const auto summary_a = read_summary(a);
  const auto summary_b = read_summary(b);
  c.a = run_side(a, summary_a);
  c.b = run_side(b, summary_b);
  const auto config_a = a / "config.resolved.yaml";
  const auto config_b = b / "config.resolved.yaml";
  if (std::filesystem::exists(config_a) && std::filesystem::exists(config_b)) {
    c.config = config_differences(read_run_file(config_a), read_run_file(config_b), config_a, config_b);
  }
  c.metrics = metric_deltas(summary_a, summary_b, tolerance);
  c.metrics_equal = std::all_of(c.metrics.begin(), c.metrics.end(), [](const auto& m) { return m.equal; });
  if (c.a.has_model && c.b.has_model) {
    c.model = compare_models(read_run_file(a / "model.json"), read_run_file(b / "model.json"),
                             tolerance, a / "model.json", b / "model.json");
  } else {
    c.model.reason = fmt::format("no model.json in {} (summary.json's status: {}): a run writes "
                                 "its model only when training finished",
                                 (c.a.has_model ? b : a).string(),
                                 (c.a.has_model ? c.b : c.a).status);
  }
  const auto loss_a = a / "loss.csv";
  const auto loss_b = b / "loss.csv";
  if (std::filesystem::exists(loss_a) && std::filesystem::exists(loss_b)) {
    c.loss = compare_losses(read_run_file(loss_a), read_run_file(loss_b), tolerance, loss_a, loss_b);
  }
  c.timing = compare_timing(summary_a, summary_b);
  c.equal = c.model.equal && c.metrics_equal;
  return c;
}

}  // namespace dt::output
