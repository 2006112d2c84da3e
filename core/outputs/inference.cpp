#include "core/outputs/inference.hpp"

#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "core/data/categorical.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/missing.hpp"
#include "core/data/npy.hpp"

#include <fmt/format.h>

#include <algorithm>

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

// The model's features and (with labels) its label found among source.columns: a categorical
// column's own column for its encoded features (data.categorical), the others by name.
void find_columns(const output::SavedModel& model, const std::string& name, bool with_labels,
                  data::SourceInfo& source) {
  const auto encoded = data::encoded_features(model.categorical);
  std::vector<std::string> needed;
  for (const auto& c : model.categorical) needed.push_back(c.column);
  for (const auto& f : model.features) {
    if (!encoded.contains(f)) needed.push_back(f);
  }
  if (model.sparse) {  // a sparse model's hashed and numeric columns (none for LIBSVM rows)
    needed = model.sparse->hashed;
    needed.insert(needed.end(), model.sparse->numeric.begin(), model.sparse->numeric.end());
  }
  for (const auto& feature : needed) {
    if (std::find(source.columns.begin(), source.columns.end(), feature) == source.columns.end()) {
      fail<DataError>("{}: no column '{}', which the model was trained on{} (the model needs: {})",
                      name, feature, text::suggestion_suffix(feature, source.columns),
                      fmt::join(needed, ", "));
    }
  }
  source.features = model.features;
  source.categorical = model.categorical;
  source.sparse = model.sparse;
  source.label = model.label;
  source.label_index = data::kNoLabel;
  const auto label_it = std::find(source.columns.begin(), source.columns.end(), model.label);
  if (with_labels) {
    if (label_it == source.columns.end()) {
      fail<DataError>("{}: no label column '{}' to evaluate against{}", name, model.label,
                      text::suggestion_suffix(model.label, source.columns));
    }
    source.label_index = static_cast<std::size_t>(label_it - source.columns.begin());
  }
}

// Reads a chunk; a missing cell, which only a model without fill values refuses, says so.
template <typename Read>
data::Shard reading(Read&& read) {
  try {
    return read();
  } catch (data::MissingValueError& e) {
    e.add_context("the model was trained with data.missing: error, so it has no values to "
                  "fill missing cells with (fill them, or train with data.missing: mean or "
                  "zero)");
    throw;
  }
}

}  // namespace

Rows::Rows(const output::SavedModel& model, std::unique_ptr<data::CsvStream> csv,
           bool with_labels)
    : model_(model),
      with_labels_(with_labels),
      kind_(data::label_kind(config::task_of(model.spec.config))),
      csv_(std::move(csv)) {
  if (model.sparse && model.sparse->hashed.empty() && model.sparse->numeric.empty()) {
    fail<DataError>("{}: this sparse model reads LIBSVM rows (index:value), not a CSV; give it "
                    "the data as LIBSVM text", csv_->name().string());
  }
  source_.columns = csv_->columns();
  source_.delimiter = csv_->delimiter();
  find_columns(model, csv_->name().string(), with_labels, source_);
}

Rows::Rows(const output::SavedModel& model, const std::filesystem::path& file,
           const std::filesystem::path& labels, bool with_labels)
    : model_(model), with_labels_(with_labels),
      kind_(data::label_kind(config::task_of(model.spec.config))) {
  config_.data.path = file;
  config_.data.labels = labels;
  config_.data.missing = model.normalization.missing;
  config_.model = model.spec.config;
  if (data::format_of(file, config::DataFormat::kAuto, "data") == config::DataFormat::kLibsvm) {
    // Features by name (f<index>): indices the model was not trained on are skipped. The
    // index (a row's offset and line) is the one part that grows with the file: 16 bytes a row.
    config_.data.format = config::DataFormat::kLibsvm;
    if (model.sparse && !(model.sparse->hashed.empty() && model.sparse->numeric.empty())) {
      fail<DataError>("{}: this sparse model hashes CSV columns ({}), so it reads a CSV with "
                      "them, not LIBSVM rows", file.string(), model.sparse->hashed.empty()
                          ? model.sparse->numeric.front() : model.sparse->hashed.front());
    }
    source_.csv = std::move(data::index_libsvm(file).rows);
    source_.columns = model.features;
    source_.columns.push_back(model.label);
    source_.rows = source_.csv->rows();
  } else {
    if (model.sparse) {
      fail<DataError>("{}: a sparse model reads LIBSVM or CSV rows, not a NumPy array",
                      file.string());
    }
    if (!model.categorical.empty()) {
      fail<DataError>("{}: this model encodes categorical columns ({}), which a NumPy array "
                      "cannot hold; give the data as a CSV",
                      file.string(), model.categorical.front().column);
    }
    config_.data.format = config::DataFormat::kNpy;
    describe_array(model, labels, data::read_npy_header(file), source_);
  }
  find_columns(model, file.string(), with_labels, source_);
}

Rows::~Rows() = default;

bool Rows::next(data::Shard& chunk) {
  if (csv_) {
    chunk = reading([&] {
      return csv_->next(source_, kChunkRows, kind_, model_.normalization.missing);
    });
    if (chunk.x.rows() == 0 && done_ == 0) {
      fail<DataError>("{}: no data rows after the header", csv_->name().string());
    }
  } else {
    const std::uint64_t n = std::min(kChunkRows, source_.rows - done_);
    if (n == 0) return false;
    data::Segment rows{done_, n, 0, 0};
    if (source_.csv) {  // a LIBSVM file: its rows by offset
      rows.byte_offset = source_.csv->row_offset[done_];
      rows.line = source_.csv->row_line[done_];
    }
    chunk = reading([&] {
      return source_.sparse ? read_libsvm_chunk(config_.data.path, source_, rows, kind_, outside_)
                            : data::load_shard(config_, source_, {rows}, kind_);
    });
  }
  if (chunk.x.rows() == 0) return false;
  if (outside_ > 0 && !warned_) {
    log::warn("{}: {} LIBSVM entries have indices outside this sparse model's {} keys from {}; "
              "they are skipped (a feature the model never saw has weight 0)",
              config_.data.path.string(), outside_, source_.sparse->width,
              source_.sparse->index_base);
    warned_ = true;
  }
  done_ += static_cast<std::uint64_t>(chunk.x.rows());
  prepare(model_, chunk, with_labels_);
  return true;
}

void prepare(const output::SavedModel& model, data::Shard& chunk, bool with_labels) {
  data::apply(model.normalization, chunk.x);
  if (with_labels && data::label_kind(config::task_of(model.spec.config)) ==
                         data::LabelKind::kCategorical) {
    data::assign_classes(chunk, model.classes);
  }
}

std::string predictions_header(const output::SavedModel& saved) {
  const auto task = config::task_of(saved.spec.config);
  if (task == config::Task::kRegression) return "prediction\n";
  if (task == config::Task::kBinary) return "prediction,probability\n";
  std::string out = "prediction";
  for (const auto& c : saved.classes) out += ",p_" + c;
  return out + '\n';
}

namespace {

// predict's lines for a chunk's predictions (predictions_header's columns).
void append_lines(const output::SavedModel& saved, const models::RowMatrix& pred, std::string& out) {
  const auto task = config::task_of(saved.spec.config);
  for (Eigen::Index i = 0; i < pred.rows(); ++i) {
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

}  // namespace

void append_predictions(const output::SavedModel& saved, models::Model& model,
                        const data::Shard& chunk, std::string& out) {
  models::RowMatrix pred;
  model.predict(saved.params, chunk.x, pred);
  append_lines(saved, pred, out);
}

void append_predictions(const output::SavedModel& saved, SparsePredictor& model,
                        const data::Shard& chunk, std::string& out) {
  models::RowMatrix pred;
  model.load(chunk);
  model.predict(pred);
  append_lines(saved, pred, out);
}

Evaluation::Evaluation(const output::SavedModel& saved)
    : saved_(saved),
      model_(models::make_model(saved.spec)),
      scores_(model_->task(), models::ScoreMetrics::Auc::kExact) {
  if (saved.sparse) sparse_ = std::make_unique<SparsePredictor>(saved);
}

Evaluation::~Evaluation() = default;

void Evaluation::add(const data::Shard& chunk) {
  if (sparse_) {  // the whole chunk as one compact batch
    sparse_->load(chunk);
    const auto r = sparse_->evaluate(chunk);
    total_.loss_sum += r.loss_sum;
    total_.correct += r.correct;
    total_.squared_error_sum += r.squared_error_sum;
    rows_ += static_cast<std::uint64_t>(chunk.y.size());
    if (model_->task() != config::Task::kRegression) {
      models::RowMatrix pred;
      sparse_->predict(pred);
      scores_.add(pred, chunk.y);
    }
    return;
  }
  // One chunk of at most kChunkRows rows: evaluate_rows' own sum is that chunk's, added here
  // in the order it added its chunks.
  const auto r = roles::evaluate_rows(*model_, saved_.params, chunk);
  total_.loss_sum += r.loss_sum;
  total_.correct += r.correct;
  total_.squared_error_sum += r.squared_error_sum;
  rows_ += static_cast<std::uint64_t>(chunk.y.size());
  if (model_->task() != config::Task::kRegression) {
    roles::score_rows(*model_, saved_.params, chunk, scores_);
  }
}

roles::Metrics Evaluation::metrics() {
  auto m = roles::to_metrics(model_->task(), total_.loss_sum, total_.correct,
                             total_.squared_error_sum, rows_);
  if (model_->task() != config::Task::kRegression) roles::set_score_metrics(m, scores_);
  return m;
}

}  // namespace dt::inference
