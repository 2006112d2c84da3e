// Model::batch_loss_and_gradient on sparse rows: the batch is compacted to its own keys, the
// sparse model of the same spec runs on the gathered parameters of those keys, and the local
// gradient is added to the full-size one at the keys. What every mode that exchanges full
// vectors (ring, parameters, async, servers) trains sparse data with; the star's sparse
// exchange (core/modes/sparse_gradients.cpp) uses the sparse model directly.

#include "core/models/model.hpp"

#include "core/models/detail.hpp"
#include "core/models/sparse_model.hpp"

namespace dt::models {

struct Model::SparseScratch {
  std::unique_ptr<SparseModel> model;
  SparseBatch batch;
  std::vector<double> local;
  std::vector<double> local_grad;
  std::vector<double> y;
};

void compact_batch(const BatchRows& batch, SparseBatch& out, std::vector<double>& y) {
  const auto n = static_cast<std::size_t>(batch.rows());
  if (n == 0) {
    out.keys.clear();
    out.local.clear();
    out.values.clear();
    out.ones = false;
    out.row_start.assign(1, 0);
  } else {
    compact(*batch.sparse, batch.pick, out);
  }
  y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = batch.y(static_cast<Eigen::Index>(batch.pick.empty() ? i : batch.pick[i]));
  }
}

Model::Model() = default;
Model::~Model() = default;

BatchResult Model::sparse_batch_loss_and_gradient(std::span<const double> params,
                                                  const BatchRows& batch,
                                                  std::span<double> grad_sum) {
  detail::check_params(*this, params.size(), "the parameter vector");
  detail::check_params(*this, grad_sum.size(), "the gradient");
  if (batch.rows() == 0) return {};
  if (!sparse_) {
    sparse_ = std::make_unique<SparseScratch>();
    sparse_->model = make_sparse_model(spec());
  }
  auto& s = *sparse_;
  compact_batch(batch, s.batch, s.y);
  const std::size_t outputs = s.model->outputs();
  gather_params(params, s.batch, outputs, s.local);
  s.local_grad.assign(s.local.size(), 0.0);
  const auto result = s.model->loss_and_gradient(s.local, s.batch, s.y, s.local_grad);
  add_gradient(s.local_grad, s.batch, outputs, grad_sum);
  return result;
}

}  // namespace dt::models
