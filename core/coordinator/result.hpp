#pragma once
// What a finished (or failed) run leaves for the outputs: the loss log's rows, the metrics, each
// worker's statistics and the whole RunResult that core/outputs/ writes.

#include "core/data/dataset.hpp"
#include "core/protocol/protocol.hpp"
#include "base/timeline.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {

struct LogRow {
  std::uint64_t step = 0;  // steps completed
  double epoch = 0;        // fractional epochs completed
  double seconds = 0;      // since training started
  double train_loss = 0;   // mean batch loss since the previous row
  std::optional<double> validation_loss;
  std::optional<double> validation_metric;  // accuracy (classification) or mse (regression)
  std::optional<double> validation_log_loss;  // classification (clipped, core/models/metrics.hpp)
  std::optional<double> validation_auc;       // binary, when both classes are held out
  std::vector<double> worker_loss;          // each worker's mean batch loss since the previous row
};

struct Metrics {
  std::uint64_t rows = 0;
  double loss = 0;
  std::optional<double> mse;
  std::optional<double> accuracy;
  std::optional<double> log_loss;
  // Binary tasks: the area under the ROC curve. auc_measured false: not computed (tensor mode's
  // training rows); measured but nullopt: the rows hold one class only (undefined: JSON null).
  bool auc_measured = false;
  std::optional<double> auc;
  double auc_error_bound = 0;  // training rows: the merged histograms' bound; 0 when exact
};

struct WorkerStats {
  int rank = 0;
  std::int64_t pid = 0;
  std::string host;
  std::uint64_t rows = 0;
  protocol::Report report;
};

// What a finished (or failed) run leaves for the outputs.
struct RunResult {
  std::string status = "failed";  // "ok", "failed", "interrupted"
  std::string error;              // the failure, one line
  data::SourceInfo source;
  data::Normalization normalization;
  std::vector<std::string> classes;
  std::vector<double> params;
  std::vector<LogRow> log;
  std::optional<Metrics> final;       // the final model over all training rows
  std::optional<Metrics> validation;  // over the validation split
  std::uint64_t steps = 0;
  std::uint64_t planned_steps = 0;  // the steps training was to take, as `steps` counts them
  std::uint64_t train_rows = 0;
  std::uint64_t validation_rows = 0;
  std::uint64_t samples = 0;  // rows processed in training (for samples per second)
  double wall_seconds = 0;
  double train_seconds = 0;
  // The coordinator's peak memory, taken once when the outputs are written (after the final
  // evaluation), so that summary.json and --json say the same; 0: not taken yet.
  std::uint64_t max_rss_bytes = 0;
  std::vector<WorkerStats> workers;
  std::vector<std::string> warnings;
  // summary.json's "checkpoint" when not empty: {"every_steps", "last_step", "resumed_from_step",
  // "resumed_from"} (core/coordinator/resume.hpp, cli run).
  nlohmann::json checkpoint = nlohmann::json::object();
  // Workers persistently slower than straggler_factor x the others (Straggler::to_json each).
  nlohmann::json stragglers = nlohmann::json::array();
  // Workers lost during the run, one object each (rank, pid, host, cause, step, action), and
  // what was done about them (summary.json "failures").
  nlohmann::json failures = nlohmann::json::array();
  // output.timeline: every recording thread's spans (timeline_recording.hpp); empty when off.
  std::vector<timeline::Track> timeline;
  // training.early_stopping: {metric, patience, min_delta, stopped_at, best_step, best_metric}
  // (core/coordinator/early_stop.hpp); null without it.
  nlohmann::json early_stopping;
  // fault_tolerance.elastic: the membership record (core/coordinator/membership.hpp); null
  // without it.
  nlohmann::json membership;
  // The mode's own statistics, written into summary.json as "aggregation" when not empty.
  nlohmann::json aggregation = nlohmann::json::object();
};

}  // namespace dt::roles
