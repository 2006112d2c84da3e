#pragma once
// predict and eval: a saved model applied to data read a chunk of rows at a time (so their
// memory does not grow with the data), with the model's own transforms and class names.

#include "core/coordinator/evaluate.hpp"
#include "core/data/csv_stream.hpp"
#include "core/outputs/run_output.hpp"
#include "core/outputs/sparse_inference.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace dt::inference {

// Rows per chunk: evaluate_rows' chunk, so eval's sums are added in the order they were when
// the whole file was one shard (the same bits), and predict's chunks are the ones it had.
inline constexpr std::uint64_t kChunkRows = 8192;

// The rows of predict's or eval's data: the columns the model needs, found by name (any order,
// extra columns ignored), in the model's order. With `with_labels`, the model's label column is
// required and read. DataError: "data.csv: no column 'x3', which the model was trained on (the
// model needs: ...)".
class Rows {
 public:
  // A CSV or TSV read front to back (its header is checked here, before any row is read).
  Rows(const output::SavedModel& model, std::unique_ptr<data::CsvStream> csv, bool with_labels);
  // An .npy file, read a block of rows at a time: an array as wide as the model's features
  // holds them in the model's order; otherwise its columns are x0..x{k-1}, the last the label
  // (named as the model's). `labels`: a 1-D .npy of labels (an .npz's labels array) instead.
  // Or a LIBSVM file (data::format_of says which), indexed first, then read a chunk at a time;
  // its features by name (f<index>), indices the model does not have skipped.
  // A sparse model (model.sparse) reads its rows as training did: a CSV's hashed and numeric
  // columns into keys (the CSV form above), or LIBSVM rows (this form) as keys index -
  // index_base, an index outside its keys skipped with one warning; never an .npy.
  Rows(const output::SavedModel& model, const std::filesystem::path& file,
       const std::filesystem::path& labels, bool with_labels);
  ~Rows();
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  // The next chunk (at most kChunkRows rows), already prepare()d; false after the last.
  // DataError for a CSV with no data rows, and for a bad row (after the rows before it).
  [[nodiscard]] bool next(data::Shard& chunk);

 private:
  const output::SavedModel& model_;
  bool with_labels_;
  data::LabelKind kind_;
  data::SourceInfo source_;
  std::unique_ptr<data::CsvStream> csv_;  // or the .npy / LIBSVM file in config_.data
  config::Config config_;
  std::uint64_t done_ = 0;  // rows read so far
  std::uint64_t outside_ = 0;  // a sparse model's LIBSVM entries past its keys, skipped
  bool warned_ = false;
};

// The transforms of one chunk of rows, as training applied them: the one place predict and
// eval change rows read from the data before the model sees them (normalization; the labels
// turned into class indices for eval). Other transforms that model.json records go here.
void prepare(const output::SavedModel& model, data::Shard& chunk, bool with_labels);

// predict's CSV: regression "prediction"; binary "prediction,probability"; multiclass
// "prediction,p_<class>..." with class names. The header line, then a chunk's lines.
[[nodiscard]] std::string predictions_header(const output::SavedModel& model);
void append_predictions(const output::SavedModel& saved, models::Model& model,
                        const data::Shard& chunk, std::string& out);
// The same for a sparse model (saved.sparse) on sparse rows.
void append_predictions(const output::SavedModel& saved, SparsePredictor& model,
                        const data::Shard& chunk, std::string& out);

// eval's sums, a chunk at a time; metrics() at the end.
class Evaluation {
 public:
  explicit Evaluation(const output::SavedModel& saved);
  ~Evaluation();
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;
  void add(const data::Shard& chunk);
  // Not const: the exact AUC sorts the scores it kept (8 bytes a row of a binary model).
  [[nodiscard]] roles::Metrics metrics();

 private:
  const output::SavedModel& saved_;
  std::unique_ptr<models::Model> model_;  // a sparse model's too: its task
  std::unique_ptr<SparsePredictor> sparse_;  // a sparse model: its predictions and sums
  models::BatchResult total_;
  models::ScoreMetrics scores_;
  std::uint64_t rows_ = 0;
};

}  // namespace dt::inference
