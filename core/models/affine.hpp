#pragma once
// The convex models share one body: outputs = X·W + b followed by their task's loss head.
// They work row by row (kernels.hpp), in chunks of rows still in cache between the forward and
// the backward pass, reading a shuffled batch's rows where they lie: one pass over memory.
// linear.cpp, logistic.cpp and softmax.cpp only choose the layout (the parameter shapes a user
// of that model expects) and the task; the arithmetic exists once.

#include "core/models/detail.hpp"

#include <vector>

namespace dt::models::detail {

// Rows a chunk of the forward/head/backward pass: multi-output models, and single-output ones
// (whose backward pass adds rows to the gradient four at a time: rows 4j..4j+3 of the batch
// as ((r0 + r1) + (r2 + r3)), the rows after the last multiple of 4 one at a time). The sparse
// models (sparse_model.cpp) sum in the same order, so they give the same bits.
inline constexpr Eigen::Index kAffineChunk = 64;
inline constexpr Eigen::Index kAffineSingleChunk = 8;

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
  BatchResult batch_loss_and_gradient(std::span<const double> params, const BatchRows& batch,
                                      std::span<double> grad_sum) override;
  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y) override;
  void predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) override;

 private:
  [[nodiscard]] static Eigen::Index row_index(std::span<const std::uint64_t> pick,
                                              Eigen::Index i) noexcept {
    return pick.empty() ? i : static_cast<Eigen::Index>(pick[static_cast<std::size_t>(i)]);
  }
  [[nodiscard]] static const double* row(const ConstRowsRef& x, std::span<const std::uint64_t> pick,
                                         Eigen::Index i) noexcept {
    return x.data() + row_index(pick, i) * x.outerStride();
  }
  // z's rows 0..count-1 = the batch rows first..first+count-1 times W, plus b.
  void forward(std::span<const double> params, const ConstRowsRef& x,
               std::span<const std::uint64_t> pick, Eigen::Index first, Eigen::Index count,
               Eigen::Ref<RowMatrix> z) const;
  // Loss and metrics of the batch, and its gradient added to grad_sum unless null.
  BatchResult pass(std::span<const double> params, const BatchRows& batch, double* grad_sum);
  // One output: the batch rows first..first+count-1 times their dloss/doutput (dz) into the
  // weights' and the bias's gradient sums, four rows at a time.
  void single_backward(const BatchRows& batch, Eigen::Index first, Eigen::Index count,
                       const Eigen::Ref<RowMatrix>& dz, double* gw, double* gb) const;

  ModelSpec spec_;
  std::vector<ParamBlock> layout_;
  config::Task task_;
  Eigen::Index inputs_;
  Eigen::Index outputs_;
  RowMatrix scratch_;       // one chunk's outputs, then their gradients
  Eigen::VectorXd labels_;  // one chunk's labels
};

// The layout of a one-output affine model (linear and logistic regression): "weights" [inputs]
// and "bias" [] (a scalar), the shapes of numpy's and sklearn's coef_ / intercept_ for one target.
[[nodiscard]] std::vector<ParamBlock> single_output_layout(int inputs);

}  // namespace dt::models::detail
