#include "core/models/affine.hpp"

#include <algorithm>
#include <utility>

namespace dt::models::detail {

std::vector<ParamBlock> single_output_layout(int inputs) {
  const auto p = static_cast<std::size_t>(inputs);
  return {
      {"weights", {inputs}, 0, p, true},
      {"bias", {}, p, 1, false},
  };
}

AffineModel::AffineModel(ModelSpec spec, std::vector<ParamBlock> layout)
    : spec_(std::move(spec)),
      layout_(std::move(layout)),
      task_(task_for(spec_.config)),
      inputs_(spec_.inputs),
      outputs_(outputs()),
      scratch_(0, outputs_) {}

void AffineModel::init(std::span<double> params, std::uint64_t /*seed*/) const {
  check_params(*this, params.size(), "the parameter vector");
  // Zeros: the losses are convex, so there is no symmetry to break.
  std::fill(params.begin(), params.end(), 0.0);
}

void AffineModel::forward(std::span<const double> params, const ConstRowsRef& x) {
  const Eigen::Index n = x.rows();
  if (scratch_.rows() < n) scratch_.resize(n, outputs_);
  const auto w = block(params, layout_[0].offset, inputs_, outputs_);
  const auto b = block(params, layout_[1].offset, 1, outputs_);
  auto z = scratch_.topRows(n);
  z.noalias() = x * w;
  z.rowwise() += b.row(0);
}

BatchResult AffineModel::loss_and_gradient(std::span<const double> params, ConstRowsRef x,
                                           ConstVectorRef y, std::span<double> grad_sum) {
  check_batch(*this, params, x, &y, &grad_sum);
  forward(params, x);
  const Eigen::Index n = x.rows();
  auto dz = scratch_.topRows(n);
  const BatchResult result = apply_head(task_, dz, y, /*gradient=*/true);
  auto gw = block(grad_sum, layout_[0].offset, inputs_, outputs_);
  auto gb = block(grad_sum, layout_[1].offset, 1, outputs_);
  gw.noalias() += x.transpose() * dz;
  gb.row(0) += dz.colwise().sum();
  return result;
}

BatchResult AffineModel::evaluate(std::span<const double> params, ConstRowsRef x,
                                  ConstVectorRef y) {
  check_batch(*this, params, x, &y, nullptr);
  forward(params, x);
  return apply_head(task_, scratch_.topRows(x.rows()), y, /*gradient=*/false);
}

void AffineModel::predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) {
  check_batch(*this, params, x, nullptr, nullptr);
  const auto w = block(params, layout_[0].offset, inputs_, outputs_);
  const auto b = block(params, layout_[1].offset, 1, outputs_);
  out.resize(x.rows(), outputs_);
  out.noalias() = x * w;
  out.rowwise() += b.row(0);
  apply_link(task_, out);
}

}  // namespace dt::models::detail
