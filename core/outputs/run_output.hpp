#pragma once
// What a run leaves on disk (DESIGN.md section 4), every file written atomically, and reading
// model.json back for predict and eval.
//
// core/outputs/: what a run writes (summary, loss log, model.json, the plot) and what reads a
// model back (predict, eval).
// May use: base/, core/config/, core/data/, core/models/, core/coordinator/ (the run's result, its
// checkpoint record).

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/models/model.hpp"
#include "core/coordinator/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dt::output {

// JSON as text. Strings from data files (class names, error messages quoting a cell) may not be
// UTF-8; such bytes become U+FFFD instead of failing the whole output. indent -1: one line.
[[nodiscard]] std::string json_text(const nlohmann::ordered_json& j, int indent = -1);

// The run folder: output.dir with workers/ inside, created if missing. A fresh run first moves
// an earlier run folder whole to <output.dir>.prev (run_rotation.hpp); what is left of a previous
// run's outputs is removed, and its checkpoints too unless this run resumes from them.
[[nodiscard]] std::filesystem::path prepare_run_dir(const config::Config& config,
                                                    bool resume = false);

[[nodiscard]] nlohmann::ordered_json model_json(const config::Config& config,
                                                const roles::RunResult& result,
                                                const models::Model& model);
// model.json's "categorical": [{"column", "encoding": "one_hot", "categories"} or {"column",
// "encoding": "hash", "buckets"}] (also the export formats' "categorical" metadata).
[[nodiscard]] nlohmann::ordered_json categorical_json(const std::vector<data::Encoding>& encodings);
// One set of metrics as summary.json's "validation" and eval print it: rows, loss, then mse or
// accuracy, log_loss and (binary) auc, null when the rows hold one class only.
[[nodiscard]] nlohmann::ordered_json metrics_json(const roles::Metrics& m);
[[nodiscard]] nlohmann::ordered_json summary_json(const config::Config& config,
                                                  const roles::RunResult& result,
                                                  const std::vector<std::string>& expect_failures);
[[nodiscard]] std::string loss_csv(const config::Config& config, const roles::RunResult& result);
// loss.svg (plot.cpp): the config's name as title, output.log_every.steps (to tell the last
// row's partial window), output.plot.per_worker and, with training.lr_schedule, each log row's
// rate (loss.csv's lr column; empty: no learning-rate panel). training.early_stopping's steps
// come from the result.
struct PlotOptions {
  std::string title;
  std::int64_t log_every = 10;
  bool per_worker = false;
  std::vector<double> lr;
};
[[nodiscard]] std::string loss_svg(const roles::RunResult& result, const PlotOptions& options);

// Writes config.resolved.yaml (at the start of a run).
void write_resolved_config(const std::filesystem::path& dir, const config::Config& config);
// Writes loss.csv, loss.svg, summary.json, and model.json when training finished.
void write_results(const std::filesystem::path& dir, const config::Config& config,
                   const roles::RunResult& result,
                   const std::vector<std::string>& expect_failures);

// `expect:` thresholds not met, one line each ("final_loss 0.52 is above the maximum 0.5").
[[nodiscard]] std::vector<std::string> check_expectations(const config::Config& config,
                                                          const roles::RunResult& result);

// model.json read back. DataError naming the file and the field for anything malformed.
struct SavedModel {
  models::ModelSpec spec;
  std::vector<double> params;
  std::vector<std::string> features;
  std::vector<data::Encoding> categorical;  // data.categorical; empty without it
  std::string label;
  std::vector<std::string> classes;
  data::Normalization normalization;
  // A sparse model (model.json version 2, sparse_model_file.hpp): how its raw input becomes
  // keys, and its weights as nonzeros only (ascending positions in the weights block, row-major,
  // and their values); `params` then holds the biases alone and `features` is empty.
  std::optional<data::SparseSource> sparse;
  std::vector<std::uint64_t> weight_index;
  std::vector<double> weight_values;
};
[[nodiscard]] SavedModel read_model(const std::filesystem::path& path);
// The same from model.json's text, `origin` naming it in messages (read_model reads the file
// and calls this; the fuzzer of tests/fuzz/ gives it text directly).
[[nodiscard]] SavedModel parse_model(std::string_view text, const std::filesystem::path& origin);

}  // namespace dt::output
