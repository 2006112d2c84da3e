#include "core/outputs/inference.hpp"

#include "base/error.hpp"
#include "base/text.hpp"
#include "core/data/missing.hpp"
#include "core/data/npy.hpp"
#include "core/data/libsvm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace dt::inference {

namespace {

// The columns of an .npy as predict and eval name them (inference.hpp).
void describe_array(const output::SavedModel& model, const std::filesystem::path& labels,
                    const data::NpyArray& x, data::SourceInfo& source) {
  source.rows = x.rows;
  if (labels.empty() && x.cols == model.features.size()) {
    source.columns = model.features;
    return;
  }
  for (std::uint64_t c = 0; c < x.cols; ++c) source.columns.push_back(fmt::format("x{}", c));
  if (labels.empty()) {
    source.columns.back() = model.label;
    return;
  }
  const auto y = data::read_npy_header(labels);
  if (y.rows != x.rows) {
    fail<DataError>("{}: {} labels, but {} has {} rows", labels.string(), y.rows,
                    x.path.string(), x.rows);
  }
  source.columns.push_back(model.label);
}

}  // namespace

data::Shard load_for_model(const output::SavedModel& model, const std::filesystem::path& csv,
                           bool with_labels, const std::filesystem::path& labels) {
  config::Config config;
  config.data.path = csv;
  config.data.labels = labels;
  config.model = model.spec.config;
  // Missing cells as in training: NaN (or 0) filled by apply() with the model's fill values.
  config.data.missing = model.normalization.missing;
  data::SourceInfo source;
  if (csv.extension() == ".npy" && !model.categorical.empty()) {
    fail<DataError>("{}: this model encodes categorical columns ({}), which a NumPy array cannot "
                    "hold; give the data as a CSV",
                    csv.string(), model.categorical.front().column);
  }
  if (csv.extension() == ".npy") {
    config.data.format = config::DataFormat::kNpy;
    describe_array(model, labels, data::read_npy_header(csv), source);
  } else if (data::format_of(csv, config::DataFormat::kAuto, "data") == config::DataFormat::kLibsvm) {
    // Features by name (f<index>): indices the model was not trained on are skipped.
    config.data.format = config::DataFormat::kLibsvm;
    source.csv = std::move(data::index_libsvm(csv).rows);
    source.columns = model.features;
    source.columns.push_back(model.label);
    source.rows = source.csv->rows();
  } else {
    source.csv = data::index_csv(csv);
    source.columns = source.csv->columns;
    source.rows = source.csv->rows();
  }
  // The columns it reads: each feature's, but a categorical column's for its encoded features.
  const auto encoded = data::encoded_features(model.categorical);
  std::vector<std::string> needed;
  for (const auto& c : model.categorical) needed.push_back(c.column);
  for (const auto& f : model.features) {
    if (!encoded.contains(f)) needed.push_back(f);
  }
  for (const auto& feature : needed) {
    if (std::find(source.columns.begin(), source.columns.end(), feature) == source.columns.end()) {
      fail<DataError>("{}: no column '{}', which the model was trained on{} (the model needs: {})",
                      csv.string(), feature, text::suggestion_suffix(feature, source.columns),
                      fmt::join(needed, ", "));
    }
  }
  source.features = model.features;
  source.categorical = model.categorical;
  source.label = model.label;
  source.label_index = data::kNoLabel;
  const auto label_it = std::find(source.columns.begin(), source.columns.end(), model.label);
  if (with_labels) {
    if (label_it == source.columns.end()) {
      fail<DataError>("{}: no label column '{}' to evaluate against{}", csv.string(), model.label,
                      text::suggestion_suffix(model.label, source.columns));
    }
    source.label_index = static_cast<std::size_t>(label_it - source.columns.begin());
  }
  std::vector<std::uint64_t> rows(source.rows);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  const auto kind = data::label_kind(config::task_of(model.spec.config));
  auto shard = [&] {
    try {
      return data::load_shard(config, source, data::to_segments(rows, source.csv), kind);
    } catch (data::MissingValueError& e) {  // only a model without fill values refuses one
      e.add_context("the model was trained with data.missing: error, so it has no values to "
                    "fill missing cells with (fill them, or train with data.missing: mean or "
                    "zero)");
      throw;
    }
  }();
  data::apply(model.normalization, shard.x);
  if (with_labels && kind == data::LabelKind::kCategorical) data::assign_classes(shard, model.classes);
  return shard;
}

std::string predictions_csv(const output::SavedModel& saved, const data::Shard& shard) {
  auto model = models::make_model(saved.spec);
  const auto task = model->task();
  std::string out;
  if (task == config::Task::kRegression) {
    out = "prediction\n";
  } else if (task == config::Task::kBinary) {
    out = "prediction,probability\n";
  } else {
    out = "prediction";
    for (const auto& c : saved.classes) out += ",p_" + c;
    out += '\n';
  }
  constexpr std::int64_t kChunk = 8192;
  models::RowMatrix pred;
  const auto rows = static_cast<std::int64_t>(shard.x.rows());
  for (std::int64_t begin = 0; begin < rows; begin += kChunk) {
    const auto n = std::min(kChunk, rows - begin);
    model->predict(saved.params, shard.x.middleRows(begin, n), pred);
    for (std::int64_t i = 0; i < n; ++i) {
      if (task == config::Task::kRegression) {
        fmt::format_to(std::back_inserter(out), "{}\n", pred(i, 0));
      } else if (task == config::Task::kBinary) {
        fmt::format_to(std::back_inserter(out), "{},{}\n", saved.classes.at(pred(i, 0) >= 0.5 ? 1 : 0),
                       pred(i, 0));
      } else {
        Eigen::Index best = 0;
        pred.row(i).maxCoeff(&best);
        out += saved.classes.at(static_cast<std::size_t>(best));
        for (Eigen::Index k = 0; k < pred.cols(); ++k) fmt::format_to(std::back_inserter(out), ",{}", pred(i, k));
        out += '\n';
      }
    }
  }
  return out;
}

roles::Metrics evaluate(const output::SavedModel& saved, const data::Shard& shard) {
  auto model = models::make_model(saved.spec);
  const auto total = roles::evaluate_rows(*model, saved.params, shard);
  return roles::to_metrics(model->task(), total.loss_sum, total.correct, total.squared_error_sum,
                           static_cast<std::uint64_t>(shard.y.size()));
}

}  // namespace dt::inference
