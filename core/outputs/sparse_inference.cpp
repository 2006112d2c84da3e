// predict and eval on a sparse model (sparse_inference.hpp).

#include "core/outputs/sparse_inference.hpp"

#include "base/error.hpp"
#include "core/data/libsvm.hpp"

#include <algorithm>

namespace dt::inference {

SparsePredictor::SparsePredictor(const output::SavedModel& saved)
    : saved_(saved), model_(models::make_sparse_model(saved.spec)) {
  if (!saved.sparse || saved.params.size() != model_->outputs()) {
    fail<TrainingError>("SparsePredictor: not a sparse model read by parse_model");
  }
}

void SparsePredictor::load(const data::Shard& chunk) {
  const auto& rows = *chunk.sparse;
  const models::CsrView view{rows.width, rows.row_start, rows.keys, rows.values};
  models::compact(view, {}, batch_);
  // The local vector: each batch key's weights from the sorted nonzeros (the keys ascend, so
  // each search starts where the last one ended), then the biases.
  const std::size_t k = model_->outputs();
  local_.assign(batch_.keys.size() * k + k, 0.0);
  const auto& index = saved_.weight_index;
  auto from = index.begin();
  for (std::size_t n = 0; n < batch_.keys.size(); ++n) {
    const std::uint64_t first = std::uint64_t{batch_.keys[n]} * k;
    from = std::lower_bound(from, index.end(), first);
    for (auto it = from; it != index.end() && *it < first + k; ++it) {
      local_[n * k + (*it - first)] = saved_.weight_values[static_cast<std::size_t>(it - index.begin())];
    }
  }
  std::copy(saved_.params.begin(), saved_.params.end(), local_.end() - static_cast<std::ptrdiff_t>(k));
}

void SparsePredictor::predict(models::RowMatrix& out) { model_->predict(local_, batch_, out); }

models::BatchResult SparsePredictor::evaluate(const data::Shard& chunk) {
  return model_->evaluate(local_, batch_, {chunk.y.data(), static_cast<std::size_t>(chunk.y.size())});
}

data::Shard read_libsvm_chunk(const std::filesystem::path& path, const data::SourceInfo& source,
                              const data::Segment& segment, data::LabelKind kind,
                              std::uint64_t& outside) {
  data::Shard shard;
  const auto rows = static_cast<Eigen::Index>(segment.count);
  shard.x.resize(rows, 0);
  shard.y = Eigen::VectorXd::Zero(rows);
  shard.sparse.emplace();
  shard.sparse->width = source.sparse->width;
  data::load_libsvm_sparse(path, source, {segment}, shard, kind, &outside);
  return shard;
}

}  // namespace dt::inference
