#pragma once
// The convex models share one body: outputs = X·W + b followed by their task's loss head.
// linear.cpp, logistic.cpp and softmax.cpp only choose the layout (the parameter shapes a user
// of that model expects) and the task; the arithmetic exists once.

#include "core/models/detail.hpp"

#include <vector>

namespace dt::models::detail {

// Threading: one object per thread (the scratch buffer is mutable state). The layout must be
// [weights (inputs x outputs), bias (outputs)] in that order.
class AffineModel final : public Model {
 public:
  AffineModel(ModelSpec spec, std::vector<ParamBlock> layout);

  [[nodiscard]] const ModelSpec& spec() const noexcept override { return spec_; }
  [[nodiscard]] const std::vector<ParamBlock>& layout() const noexcept override { return layout_; }
  void init(std::span<double> params, std::uint64_t seed) const override;
  BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                                std::span<double> grad_sum) override;
  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y) override;
  void predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) override;

 private:
  // outputs_ rows 0..n-1 = x·W + b.
  void forward(std::span<const double> params, const ConstRowsRef& x);

  ModelSpec spec_;
  std::vector<ParamBlock> layout_;
  config::Task task_;
  Eigen::Index inputs_;
  Eigen::Index outputs_;
  RowMatrix scratch_;  // grows to the largest batch seen, never shrinks
};

// The layout of a one-output affine model (linear and logistic regression): "weights" [inputs]
// and "bias" [] (a scalar), the shapes of numpy's and sklearn's coef_ / intercept_ for one target.
[[nodiscard]] std::vector<ParamBlock> single_output_layout(int inputs);

}  // namespace dt::models::detail
