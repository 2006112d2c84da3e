#pragma once
// `disttrain compare RUN_A RUN_B`: two run folders (what `disttrain run` writes) side by side,
// the tool a CI job runs after a failed `expect:` gate or to check a rerun (runs/x.prev against
// runs/x). The comparison is computed here from the files' text; cli/commands/compare.cpp only
// parses arguments, prints and maps `equal` to the exit code.
//
// Two numbers a and b are equal within a tolerance T when |a - b| <= T * max(1, |a|, |b|):
// an absolute difference for values up to 1, a relative one above. T = 0: bit-for-bit equal
// (two NaN are equal; +0 and -0 too). The runs are equal when both have a model, the models have
// the same type, names and shapes, every parameter value and normalization value is equal within
// T, and every final metric of summary.json is. Config, loss curves and timing are reported, not
// judged: two runs of different configs that give the same model are equal.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dt::output {

[[nodiscard]] bool equal_within(double a, double b, double tolerance);

// One flattened key of config.resolved.yaml ("training.optimizer.lr", "data.columns[2]") whose
// value differs; nullopt: the key is absent on that side.
struct ConfigDifference {
  std::string key;
  std::optional<std::string> a, b;
};
// The keys whose values differ, in A's key order then B's extra keys. `origin_*` name the files
// in a DataError when the text is not YAML.
[[nodiscard]] std::vector<ConfigDifference> config_differences(
    std::string_view a_text, std::string_view b_text, const std::filesystem::path& origin_a,
    const std::filesystem::path& origin_b);

// A final metric of summary.json ("final_loss", "final_metrics.accuracy", "validation.loss").
// nullopt: absent or null on that side (an undefined auc).
struct MetricDelta {
  std::string name;
  std::optional<double> a, b;
  bool equal = false;
};
[[nodiscard]] std::vector<MetricDelta> metric_deltas(const nlohmann::json& summary_a,
                                                     const nlohmann::json& summary_b,
                                                     double tolerance);

// Where a largest difference is: the tensor ("weights", "normalization.shift"), its index in
// the tensor's shape ([] for a scalar), both values and the difference.
struct ParamDifference {
  std::string tensor;
  std::vector<std::uint64_t> index;
  double a = 0, b = 0, diff = 0;
};
struct TensorDifference {
  std::string name;
  std::vector<std::int64_t> shape;
  bool sparse = false;       // either side stored it as nonzeros only
  std::uint64_t differing = 0;  // values not equal within the tolerance
  ParamDifference max_abs, max_rel;
};
struct ModelComparison {
  bool comparable = false;  // same type, features, classes, tensor names and shapes
  std::string reason;       // why not comparable, or why not equal
  bool equal = false;
  std::uint64_t values = 0;     // values compared
  std::uint64_t differing = 0;  // of them, not equal within the tolerance
  std::optional<ParamDifference> max_abs, max_rel;  // over every tensor (none: nothing compared)
  std::vector<TensorDifference> tensors;
};
// Two model.json texts (dense version 1 or sparse version 2). DataError naming the file and
// the field when one is not a model file.
[[nodiscard]] ModelComparison compare_models(std::string_view a_text, std::string_view b_text,
                                             double tolerance,
                                             const std::filesystem::path& origin_a,
                                             const std::filesystem::path& origin_b);

// The loss curves of loss.csv: the first logged step where train_loss or validation_loss differ
// beyond the tolerance, or where one curve logs a step the other does not.
struct LossComparison {
  std::uint64_t rows_a = 0, rows_b = 0;
  std::optional<std::int64_t> divergence_step;  // none: the curves agree
  std::string column;                           // "train_loss", "validation_loss" or "step"
  std::string a_value, b_value;                 // the cells there as written ("" when absent)
};
[[nodiscard]] LossComparison compare_losses(std::string_view a_text, std::string_view b_text,
                                            double tolerance,
                                            const std::filesystem::path& origin_a,
                                            const std::filesystem::path& origin_b);

// summary.json's timing, A's and B's: the run's and each worker's (a rank one run lacks: null).
struct Timing {
  nlohmann::ordered_json run;      // {"wall_seconds": {"a", "b"}, "train_seconds", "samples_per_second"}
  nlohmann::ordered_json workers;  // [{"rank", "a": {...}, "b": {...}}]
};
[[nodiscard]] Timing compare_timing(const nlohmann::json& summary_a, const nlohmann::json& summary_b);

// A run folder's side: its path, summary.json's status and what it trained.
struct RunSide {
  std::filesystem::path dir;
  std::string status, model_type;
  std::int64_t steps = 0;
  bool has_model = false;
};
struct Comparison {
  double tolerance = 0;
  RunSide a, b;
  std::vector<ConfigDifference> config;
  std::vector<MetricDelta> metrics;
  ModelComparison model;
  LossComparison loss;
  Timing timing;
  bool metrics_equal = false;
  bool equal = false;  // model.equal && metrics_equal
};
// Reads both folders. DataError (exit 2) for a folder that is missing, not a run folder (no
// summary.json) or holds an unreadable or corrupt file, naming it and what to do.
[[nodiscard]] Comparison compare_runs(const std::filesystem::path& a, const std::filesystem::path& b,
                                      double tolerance);

// The comparison as one JSON object (docs/outputs.md#comparing-two-runs lists its fields) and
// as the readable table `disttrain compare` prints (compare_report.cpp).
[[nodiscard]] nlohmann::ordered_json comparison_json(const Comparison& c);
[[nodiscard]] std::string comparison_text(const Comparison& c);

}  // namespace dt::output
