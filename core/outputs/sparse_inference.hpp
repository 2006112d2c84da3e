#pragma once
// predict and eval on a sparse model (sparse_model_file.hpp): its rows read as training read
// them (LIBSVM indices, or CSV columns hashed with the model's data.hash), a chunk at a time,
// and computed by the sparse model itself (core/models/sparse_model.hpp) on the compact chunk:
// the numbers of the dense model of the same width on the same rows, without a dense row or a
// dense weight vector of the width.

#include "core/data/dataset.hpp"
#include "core/models/sparse_batch.hpp"
#include "core/models/sparse_model.hpp"
#include "core/outputs/run_output.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

namespace dt::inference {

// One chunk of a sparse model's work: load() compacts the chunk's rows (every row, in order)
// and gathers the weights of its keys from the model's nonzeros (a key the model has no
// nonzero for has weight 0); then predict() and evaluate() as SparseModel's.
class SparsePredictor {
 public:
  explicit SparsePredictor(const output::SavedModel& saved);
  void load(const data::Shard& chunk);
  // rows x outputs: the value, P(y = 1), or the class probabilities.
  void predict(models::RowMatrix& out);
  // The loaded chunk's sums against its labels (chunk.y, prepared: class indices).
  [[nodiscard]] models::BatchResult evaluate(const data::Shard& chunk);

 private:
  const output::SavedModel& saved_;
  std::unique_ptr<models::SparseModel> model_;
  models::SparseBatch batch_;
  std::vector<double> local_;
};

// The rows of `segment` of a LIBSVM file for a sparse model (source.sparse: its width and
// index_base; source.csv: the file's index): key = index - index_base, an index outside the
// model's keys skipped and counted in `outside` (see docs/sparse.md: a feature the model never
// saw has weight 0, as in the dense path).
[[nodiscard]] data::Shard read_libsvm_chunk(const std::filesystem::path& path,
                                            const data::SourceInfo& source,
                                            const data::Segment& segment, data::LabelKind kind,
                                            std::uint64_t& outside);

}  // namespace dt::inference
