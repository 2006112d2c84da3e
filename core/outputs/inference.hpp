#pragma once
// predict and eval: a saved model applied to a CSV, with the model's own normalization and
// class names.

#include "core/coordinator/evaluate.hpp"
#include "core/outputs/run_output.hpp"

#include <filesystem>
#include <string>

namespace dt::inference {

// The CSV's columns the model needs, found by name (any order, extra columns ignored), and
// normalized as in training. With `with_labels`, the model's label column is required and read.
// DataError: "data.csv: no column 'x3', which the model was trained on (the model needs: ...)".
// An .npy file (its name ends in .npy): an array as wide as the model's features holds them in
// the model's order; otherwise its columns are x0..x{k-1}, the last the label (named as the
// model's). `labels`: a 1-D .npy of labels (an .npz's labels array) instead of a column.
[[nodiscard]] data::Shard load_for_model(const output::SavedModel& model,
                                         const std::filesystem::path& csv, bool with_labels,
                                         const std::filesystem::path& labels = {});

// CSV text: regression "prediction"; binary "prediction,probability"; multiclass
// "prediction,p_<class>..." with class names.
[[nodiscard]] std::string predictions_csv(const output::SavedModel& model, const data::Shard& shard);

[[nodiscard]] roles::Metrics evaluate(const output::SavedModel& model, const data::Shard& shard);

}  // namespace dt::inference
