// RowScorer (evaluate.hpp): a shard's rows scored a chunk at a time, dense or sparse.

#include "core/coordinator/evaluate.hpp"

namespace dt::roles {

RowScorer::RowScorer(models::Model& model, std::span<const double> params,
                     const data::Shard& shard)
    : model_(model), params_(params), shard_(shard) {
  if (shard.sparse) sparse_ = models::make_sparse_model(model.spec());
}

void RowScorer::compact_rows(std::int64_t begin, std::int64_t n) {
  const auto& rows = *shard_.sparse;
  const models::CsrView view{rows.width,
                             std::span<const std::uint64_t>(rows.row_start)
                                 .subspan(static_cast<std::size_t>(begin),
                                          static_cast<std::size_t>(n) + 1),
                             rows.keys, rows.values};
  models::compact(view, {}, batch_);
  models::gather_params(params_, batch_, sparse_->outputs(), local_);
}

models::BatchResult RowScorer::evaluate(std::int64_t begin, std::int64_t n) {
  if (!sparse_) {
    return model_.evaluate(params_, shard_.x.middleRows(begin, n), shard_.y.segment(begin, n));
  }
  if (n == 0) return {};
  compact_rows(begin, n);
  return sparse_->evaluate(local_, batch_,
                           std::span<const double>(shard_.y.data() + begin,
                                                   static_cast<std::size_t>(n)));
}

void RowScorer::predict(std::int64_t begin, std::int64_t n, models::RowMatrix& out) {
  if (!sparse_) {
    model_.predict(params_, shard_.x.middleRows(begin, n), out);
    return;
  }
  if (n == 0) {
    out.resize(0, static_cast<Eigen::Index>(sparse_->outputs()));
    return;
  }
  compact_rows(begin, n);
  sparse_->predict(local_, batch_, out);
}

}  // namespace dt::roles
