#include "core/outputs/run_output.hpp"
#include "core/outputs/timeline_file.hpp"

#include "core/models/optim_controls.hpp"

#include "core/coordinator/resume.hpp"
#include "core/outputs/run_rotation.hpp"
#include "core/outputs/sparse_model_file.hpp"
#include "core/outputs/sparse_params.hpp"

#include "base/blas_kernels.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/resources.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dt::output {

using nlohmann::ordered_json;

std::string json_text(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::filesystem::path prepare_run_dir(const config::Config& config, bool resume) {
  const auto dir = config.output.dir;
  // A fresh run moves the earlier one whole to <dir>.prev (run_rotation.hpp); a resumed run
  // continues its own folder.
  if (!resume) (void)keep_previous_run(dir);
  std::error_code ec;
  // Found before any worker starts, so a bad output.dir is bad usage (exit 2), not a failed run.
  std::filesystem::create_directories(dir / "workers", ec);
  if (ec) {
    fail<ConfigError>("output.dir: cannot create the output folder {}: {}; set output.dir to a "
                      "folder you can write",
                      dir.string(), ec.message());
  }
  // A previous run's files must not pass for this run's (an old model.json beside a new
  // "failed" summary). Only the files a run writes are removed, nothing else in the folder.
  for (const char* name : {"model.json", "summary.json", "loss.csv", "loss.svg",
                           "config.resolved.yaml", "timeline.json"}) {
    std::filesystem::remove(dir / name, ec);
    // What remove leaves (a folder with files in it) would fail the run at its very end.
    const auto left = std::filesystem::symlink_status(dir / name, ec).type();
    if (left == std::filesystem::file_type::directory) {
      fail<ConfigError>("output.dir: {} is a folder, where the run writes its {}; move it away "
                        "or set another output.dir",
                        (dir / name).string(), name);
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir / "workers", ec)) {
    if (entry.path().extension() == ".log") std::filesystem::remove(entry.path(), ec);
  }
  // A fresh run's checkpoints must not mix with an earlier run's (a later --resume would take
  // the highest step); a resumed run continues from them and keeps them.
  if (!resume) {
    for (const auto& file : checkpoint::list(roles::checkpoint_dir(dir))) {
      std::filesystem::remove(file, ec);
    }
  }
  checkpoint::sweep(roles::checkpoint_dir(dir));
  return dir;
}

ordered_json categorical_json(const std::vector<data::Encoding>& encodings) {
  ordered_json out = ordered_json::array();
  for (const auto& c : encodings) {
    ordered_json e = {{"column", c.column}, {"encoding", c.hashed() ? "hash" : "one_hot"}};
    if (c.hashed()) {
      e["buckets"] = c.buckets;
    } else {
      e["categories"] = c.categories;
    }
    out.push_back(e);
  }
  return out;
}

ordered_json model_json(const config::Config& config, const roles::RunResult& result,
                        const models::Model& model) {
  ordered_json j;
  // A model of sparse rows is version 2 (sparse_model_file.hpp): a build that reads version 1
  // only says so instead of missing its features.
  const auto& sparse = result.source.sparse;
  j["format"] = "disttrain-model";
  j["version"] = sparse ? 2 : 1;
  const auto& mc = config.model;
  ordered_json m;
  m["type"] = config::name_of(mc.type);
  m["task"] = config::name_of(config::task_of(mc));
  if (mc.type == config::ModelType::kMlp) {
    m["hidden"] = mc.hidden;
    m["activation"] = config::name_of(mc.activation);
    // Only when not the default, so a float64 model's file keeps its bytes; predict and eval
    // compute as training did (absent: float64).
    if (mc.dtype != config::Dtype::kFloat64) m["dtype"] = config::name_of(mc.dtype);
  }
  m["l2"] = mc.l2;
  m["inputs"] = model.spec().inputs;
  m["outputs"] = model.outputs();
  j["model"] = m;
  if (sparse) {
    j["sparse"] = sparse_input_json(*sparse, config.data.missing);
  } else {
    j["features"] = result.source.features;
  }
  if (!result.source.categorical.empty()) j["categorical"] = categorical_json(result.source.categorical);
  j["label"] = result.source.label;
  if (config::task_of(mc) != config::Task::kRegression) j["classes"] = result.classes;
  if (!sparse) j["normalization"] = {{"kind", config::name_of(result.normalization.kind)},
                        {"shift", result.normalization.shift},
                        {"scale", result.normalization.scale}};
  // data.missing's fill values, applied before the normalization (absent under error: a model
  // without them refuses missing cells).
  if (!sparse && result.normalization.missing != config::Missing::kError) {
    j["missing"] = {{"policy", config::name_of(result.normalization.missing)},
                    {"fill", result.normalization.fill}};
  }
  ordered_json params = ordered_json::array();
  for (const auto& block : model.layout()) {
    if (sparse && block.name == "weights") {  // its nonzeros only
      params.push_back(sparse_block_json(block, result.params));
      continue;
    }
    const auto first = result.params.begin() + static_cast<std::ptrdiff_t>(block.offset);
    params.push_back({{"name", block.name},
                      {"shape", block.shape},
                      {"data", std::vector<double>(first, first + static_cast<std::ptrdiff_t>(block.size))}});
  }
  j["parameters"] = params;
  return j;
}

namespace {

double percentile_or_zero(const std::vector<double>& v, std::size_t i) {
  return i < v.size() ? v[i] : 0.0;
}

}  // namespace

ordered_json metrics_json(const roles::Metrics& m) {
  ordered_json j;
  j["rows"] = m.rows;
  j["loss"] = m.loss;
  if (m.mse) j["mse"] = *m.mse;
  if (m.accuracy) j["accuracy"] = *m.accuracy;
  if (m.log_loss) j["log_loss"] = *m.log_loss;
  if (m.auc_measured) {
    // null: the rows hold one class only, and AUC is undefined.
    j["auc"] = m.auc ? ordered_json(*m.auc) : ordered_json(nullptr);
    if (m.auc && m.auc_error_bound > 0) j["auc_error_bound"] = m.auc_error_bound;
  }
  return j;
}

namespace {

// The rate training.lr_schedule gave the last of the first `steps` steps (the first step's
// for 0); none without a schedule, or when a cosine's span is unknown (a run stopped before
// its mode planned the steps).
std::optional<double> scheduled_lr_of(const config::Config& config, const roles::RunResult& result,
                                      std::uint64_t steps) {
  const auto& o = config.training.optimizer;
  if (!models::has_lr_schedule(o)) return std::nullopt;
  if (o.schedule.type == config::LrScheduleType::kCosine && o.schedule.t_max == 0 &&
      result.planned_steps == 0) {
    return std::nullopt;
  }
  return models::scheduled_lr(o, steps > 0 ? steps - 1 : 0, result.planned_steps);
}

// loss.svg's options: with a schedule, each log row's rate as loss.csv writes it.
PlotOptions plot_options(const config::Config& config, const roles::RunResult& result) {
  PlotOptions o{config.name, config.output.log_every_steps, config.output.plot_per_worker, {}};
  if (scheduled_lr_of(config, result, 0)) {
    o.lr.reserve(result.log.size());
    for (const auto& row : result.log) o.lr.push_back(*scheduled_lr_of(config, result, row.step));
  }
  return o;
}

}  // namespace

ordered_json summary_json(const config::Config& config, const roles::RunResult& result,
                          const std::vector<std::string>& expect_failures) {
  ordered_json j;
  j["status"] = result.status;
  if (!result.error.empty()) j["error"] = result.error;
  j["name"] = config.name;
  j["model"] = config::name_of(config.model.type);
  j["mode"] = config::name_of(config.aggregation.mode);
  j["workers"] = config::worker_count(config);
  j["output_dir"] = config.output.dir.string();
  if (result.final) {
    j["final_loss"] = result.final->loss;
    ordered_json fm = metrics_json(*result.final);
    fm.erase("rows");
    fm.erase("loss");
    j["final_metrics"] = fm;
  } else {
    j["final_loss"] = nullptr;
    j["final_metrics"] = ordered_json::object();
  }
  j["validation"] = result.validation ? metrics_json(*result.validation) : ordered_json(nullptr);
  j["steps"] = result.steps;
  // The rate of the last step taken, when training.lr_schedule moves it.
  if (const auto lr = scheduled_lr_of(config, result, result.steps)) j["final_lr"] = *lr;
  if (!result.checkpoint.empty()) j["checkpoint"] = result.checkpoint;
  j["epochs"] = config.training.epochs;
  j["train_rows"] = result.train_rows;
  j["validation_rows"] = result.validation_rows;
  j["wall_seconds"] = result.wall_seconds;
  j["train_seconds"] = result.train_seconds;
  j["samples_per_second"] =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0.0;
  // The coordinator's own peak, as `run` took it before writing the outputs (RunResult), else
  // as it is now.
  j["max_rss_bytes"] =
      result.max_rss_bytes != 0 ? result.max_rss_bytes : resources::peak_rss_bytes();
  // The dense products' kernels on this host (an MLP's last bits depend on them).
  j["blas_kernels"] = blas::kernels();
  ordered_json workers = ordered_json::array();
  for (const auto& w : result.workers) {
    // An elastic join slot no worker took; a starting rank not started again on --resume (it
    // had left) keeps its line, with pid 0.
    if (w.pid == 0 && w.rank >= config::worker_count(config)) continue;
    const auto& p = w.report.step_seconds_percentiles;
    workers.push_back({{"rank", w.rank},
                       {"pid", w.pid},
                       {"host", w.host},
                       {"rows", w.rows},
                       {"load_seconds", w.report.load_seconds},
                       {"steps", w.report.steps},
                       {"compute_seconds", w.report.compute_seconds},
                       {"comm_seconds", w.report.comm_seconds},
                       {"bytes_sent", w.report.bytes_sent},
                       {"bytes_received", w.report.bytes_received},
                       {"step_seconds", {{"p50", percentile_or_zero(p, 0)},
                                         {"p90", percentile_or_zero(p, 1)},
                                         {"p99", percentile_or_zero(p, 2)},
                                         {"max", percentile_or_zero(p, 3)}}},
                       {"max_rss_bytes", w.report.max_rss_bytes}});
  }
  j["worker_stats"] = workers;
  // The mode's own statistics (staleness, servers, rounds, ...), when it has any.
  if (!result.aggregation.empty()) j["aggregation"] = result.aggregation;
  // training.early_stopping: where it stopped and which check's parameters were written.
  if (!result.early_stopping.is_null()) j["early_stopping"] = result.early_stopping;
  // fault_tolerance.elastic: who left (and joined) at which step, and the rows of each epoch.
  if (!result.membership.is_null()) j["membership"] = ordered_json::parse(result.membership.dump());
  // Workers lost and what was done about them; the run's own error, if any, is "error".
  j["failures"] = ordered_json::parse(result.failures.dump());
  j["stragglers"] = result.stragglers;
  j["warnings"] = result.warnings;
  j["expect"] = {{"met", expect_failures.empty()}, {"failures", expect_failures}};
  return j;
}

std::string loss_csv(const config::Config& config, const roles::RunResult& result) {
  // A column per rank slot: with fault_tolerance.elastic the rows also have those joiners may
  // take (a slot without a worker shows 0).
  std::size_t workers = static_cast<std::size_t>(config::worker_count(config));
  for (const auto& row : result.log) workers = std::max(workers, row.worker_loss.size());
  // With a schedule, a last column `lr`: the rate of the row's last step.
  const bool lr_column = scheduled_lr_of(config, result, 0).has_value();
  std::string out =
      "step,epoch,seconds,train_loss,validation_loss,validation_metric,validation_log_loss,"
      "validation_auc";
  for (std::size_t r = 0; r < workers; ++r) out += fmt::format(",worker_{}_loss", r);
  if (lr_column) out += ",lr";
  out += '\n';
  const auto opt = [](const std::optional<double>& v) {
    return v ? text::format_double(*v) : std::string();
  };
  for (const auto& row : result.log) {
    out += fmt::format("{},{},{},{},{},{},{},{}", row.step, text::format_double(row.epoch),
                       text::format_double(row.seconds), text::format_double(row.train_loss),
                       opt(row.validation_loss), opt(row.validation_metric),
                       opt(row.validation_log_loss), opt(row.validation_auc));
    for (double w : row.worker_loss) {
      out += ',';
      out += text::format_double(w);
    }
    if (lr_column) {
      out += ',';
      out += text::format_double(*scheduled_lr_of(config, result, row.step));
    }
    out += '\n';
  }
  return out;
}

void write_resolved_config(const std::filesystem::path& dir, const config::Config& config) {
  files::write_atomic(dir / "config.resolved.yaml", config::to_yaml(config));
}

void write_results(const std::filesystem::path& dir, const config::Config& config,
                   const roles::RunResult& result,
                   const std::vector<std::string>& expect_failures) {
  // A file that cannot be written (a full disk) fails the run, but summary.json still says so
  // where it can: it is small, and it is what a CI job reads first.
  try {
    files::write_atomic(dir / "loss.csv", loss_csv(config, result));
    files::write_atomic(dir / "loss.svg", loss_svg(result, plot_options(config, result)));
    if (result.status == "ok") {
      const auto model = models::make_model({config.model,
                                             static_cast<int>(data::input_width(result.source)),
                                             static_cast<int>(result.classes.size())});
      files::write_atomic(dir / "model.json",
                          json_text(model_json(config, result, *model), 1) + "\n");
    }
    if (!result.timeline.empty()) write_timeline(dir, result);  // output.timeline
  } catch (const IoError& e) {
    roles::RunResult failed = result;
    failed.status = "failed";
    failed.error = result.error.empty() ? e.what() : result.error + "; " + e.what();
    try {
      files::write_atomic(dir / "summary.json",
                          json_text(summary_json(config, failed, expect_failures), 2) + "\n");
    } catch (const IoError&) {
      // The first error is the one to report.
    }
    throw;
  }
  // Last, so a reader that sees summary.json sees the files it describes.
  files::write_atomic(dir / "summary.json",
                      json_text(summary_json(config, result, expect_failures), 2) + "\n");
}

std::vector<std::string> check_expectations(const config::Config& config,
                                            const roles::RunResult& result) {
  std::vector<std::string> failures;
  for (const auto& [metric, bound] : config.expect) {
    const bool validation = metric.starts_with("validation_");
    const auto& metrics = validation ? result.validation : result.final;
    const std::string key = validation ? metric.substr(11) : metric;
    std::optional<double> value;
    if (metrics) {
      if (key == "final_loss" || key == "loss") value = metrics->loss;
      else if (key == "mse") value = metrics->mse;
      else if (key == "accuracy") value = metrics->accuracy;
      else if (key == "log_loss") value = metrics->log_loss;
      else if (key == "auc") value = metrics->auc;
    }
    if (!value && key == "auc" && metrics && metrics->auc_measured) {
      failures.push_back(fmt::format("{} is undefined: the {} rows hold one class only", metric,
                                     validation ? "validation" : "training"));
      continue;
    }
    if (!value) {
      failures.push_back(fmt::format("{} was not measured in this run{}", metric,
                                     validation ? " (set data.validation to hold out rows)" : ""));
      continue;
    }
    if (!std::isfinite(*value)) {
      failures.push_back(fmt::format("{} is {}, not a finite number", metric, *value));
      continue;
    }
    if (bound.max && *value > *bound.max) {
      failures.push_back(fmt::format("{} {} is above the maximum {}", metric,
                                     text::format_double(*value), text::format_double(*bound.max)));
    }
    if (bound.min && *value < *bound.min) {
      failures.push_back(fmt::format("{} {} is below the minimum {}", metric,
                                     text::format_double(*value), text::format_double(*bound.min)));
    }
  }
  return failures;
}

}  // namespace dt::output
