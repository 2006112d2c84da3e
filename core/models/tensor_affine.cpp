// Tensor-parallel slice of the convex models (linear, logistic, softmax regression): the weight
// matrix [inputs, K] split by input feature (see tensor.hpp). Rank t's slice vector is
// [W rows of its feature range (row-major), then on rank 0 the bias (K values)].

#include "core/models/detail.hpp"
#include "core/models/tensor_detail.hpp"

namespace dt::models::detail {
namespace {

class AffineSlice final : public TensorSlice {
 public:
  AffineSlice(const Model& full, int tensor, int rank)
      : TensorSlice(full.spec(), tensor, rank),
        task_(full.task()),
        outputs_(full.outputs()),
        scratch_(0, outputs_) {
    features_ = split_range(spec_.inputs, tensor, rank);
    const auto& layout = full.layout();  // [weights, bias]
    const auto k = static_cast<std::size_t>(outputs_);
    add_run(layout[0].offset + static_cast<std::size_t>(features_.begin) * k,
            static_cast<std::size_t>(features_.size()) * k, true);
    if (rank == 0) add_run(layout[1].offset, k, true);
  }

  BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                                std::span<double> grad_sum,
                                const GroupAllReduce& all_reduce) override {
    check(params, x, y, &grad_sum);
    forward(params, x, all_reduce);
    const Eigen::Index n = x.rows();
    auto dz = scratch_.topRows(n);
    const BatchResult result = apply_head(task_, dz, y, /*gradient=*/true);
    auto gw = block(grad_sum, 0, features_.size(), outputs_);
    gw.noalias() += x.transpose() * dz;
    if (rank_ == 0) {
      auto gb = block(grad_sum, weight_count(), 1, outputs_);
      gb.row(0) += dz.colwise().sum();
    }
    return result;
  }

  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                       const GroupAllReduce& all_reduce) override {
    check(params, x, y, nullptr);
    forward(params, x, all_reduce);
    return apply_head(task_, scratch_.topRows(x.rows()), y, /*gradient=*/false);
  }

 private:
  [[nodiscard]] std::size_t weight_count() const noexcept {
    return static_cast<std::size_t>(features_.size()) * static_cast<std::size_t>(outputs_);
  }

  // scratch_ rows 0..n-1 = x·W (all features, summed over the group) + b.
  void forward(std::span<const double> params, const ConstRowsRef& x,
               const GroupAllReduce& all_reduce) {
    const Eigen::Index n = x.rows();
    if (scratch_.rows() < n) scratch_.resize(n, outputs_);
    const auto w = block(params, 0, features_.size(), outputs_);
    auto z = scratch_.topRows(n);
    z.noalias() = x * w;
    if (rank_ == 0) z.rowwise() += block(params, weight_count(), 1, outputs_).row(0);
    // The top n rows of a row-major matrix are contiguous.
    all_reduce(std::span<double>(scratch_.data(), static_cast<std::size_t>(n * outputs_)));
  }

  config::Task task_;
  Eigen::Index outputs_;
  RowMatrix scratch_;  // partial, then full logits; grows to the largest batch, never shrinks
};

}  // namespace

std::unique_ptr<TensorSlice> make_affine_slice(const Model& full, int tensor, int rank) {
  return std::make_unique<AffineSlice>(full, tensor, rank);
}

}  // namespace dt::models::detail
