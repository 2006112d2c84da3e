#pragma once
// Linear, logistic and softmax regression over a compact sparse batch (sparse_batch.hpp), on the
// batch's LOCAL parameter vector: a step costs the keys the batch touches, not the width.
//
// The same model as the dense one (model.hpp, affine.hpp) on the dense matrix of the same rows:
// same losses (squared error, binary cross-entropy from the logit, softmax cross-entropy with the
// log-sum-exp shift: the dense heads themselves), same sums (loss_sum, correct,
// squared_error_sum), same predictions. And the same bits, when each row's keys are ascending
// and distinct: a row's dot product keeps the dense kernel's 8 lanes (lane = global key mod 8),
// the heads run on the dense model's chunks of rows, and a single-output gradient adds rows in
// the dense model's groups of four. Repeated keys in a row are added up (as a dense matrix that
// sums them would hold them), equal to rounding only.
//
// L2 is lazy: regularization() and add_regularization_gradient() cover the weights of the
// batch's keys only (what sparse trainers do), not every weight as the dense model's do, so with
// l2 > 0 a sparse run differs from a dense one: a weight decays only on the steps that touch it.
// Biases are never regularized. The penalty stays apart from the batch sums, as in the dense
// models (it belongs to the objective once, not to every row).
//
// Threading: one object per thread (scratch buffers). Labels: one per batch row, in batch order
// (the value, 0/1, or a class index in [0, K): DataError otherwise).

#include "core/models/model.hpp"
#include "core/models/sparse_batch.hpp"

#include <memory>
#include <span>
#include <vector>

namespace dt::models {

class SparseModel {
 public:
  explicit SparseModel(ModelSpec spec);

  [[nodiscard]] const ModelSpec& spec() const noexcept { return spec_; }
  [[nodiscard]] config::Task task() const noexcept { return task_; }
  [[nodiscard]] std::uint64_t width() const noexcept { return width_; }
  [[nodiscard]] std::size_t outputs() const noexcept { return outputs_; }
  // The full vector's size: width * outputs weights, then outputs biases.
  [[nodiscard]] std::size_t parameter_count() const noexcept { return (width_ + 1) * outputs_; }
  // A local vector's size for this batch.
  [[nodiscard]] std::size_t local_count(const SparseBatch& batch) const noexcept {
    return (batch.keys.size() + 1) * outputs_;
  }

  // Loss sum over the batch, and ADDS the gradient of that sum to local_grad. No allocation
  // once warmed up for a batch of this size.
  BatchResult loss_and_gradient(std::span<const double> local, const SparseBatch& batch,
                                std::span<const double> y, std::span<double> local_grad);
  // Loss sum and metrics only.
  BatchResult evaluate(std::span<const double> local, const SparseBatch& batch,
                       std::span<const double> y);
  // Predictions, rows x outputs(): the value, P(y = 1), or the class probabilities.
  void predict(std::span<const double> local, const SparseBatch& batch, RowMatrix& out);

  // Lazy L2 (see above): 0.5 * l2 * ||the batch keys' weights||^2, and its gradient added.
  [[nodiscard]] double regularization(std::span<const double> local,
                                      const SparseBatch& batch) const;
  void add_regularization_gradient(std::span<const double> local, const SparseBatch& batch,
                                   std::span<double> local_grad) const;

 private:
  void check(std::span<const double> local, const SparseBatch& batch,
             const std::span<const double>* y, const std::span<double>* grad) const;
  // z's rows = the batch rows first..first+count-1's outputs. The kOnes forms (and
  // multi_backward's) are for a batch with implicit ones: no value read, no multiply.
  template <bool kOnes>
  void forward_rows(std::span<const double> local, const SparseBatch& batch, std::size_t first,
                    std::size_t count, double* z) const;
  void forward(std::span<const double> local, const SparseBatch& batch, std::size_t first,
               std::size_t count, double* z) const;
  BatchResult pass(std::span<const double> local, const SparseBatch& batch,
                   std::span<const double> y, double* grad);
  // One output: rows first..first+count-1 times their dz into the weights' and bias's gradient,
  // in the dense model's groups of four rows.
  template <bool kOnes>
  void single_backward(const SparseBatch& batch, std::size_t first, std::size_t count,
                       const double* dz, double* gw, double* gb);
  template <bool kOnes>
  void multi_backward(const SparseBatch& batch, std::size_t first, std::size_t count,
                      const double* dz, double* gw, double* gb) const;

  ModelSpec spec_;
  config::Task task_;
  std::uint64_t width_;
  std::size_t outputs_;
  RowMatrix scratch_;          // one chunk's outputs, then their gradients
  std::vector<double> quad_;   // single_backward: 4 slots a key, zero between groups
};

// linear_regression, logistic_regression and softmax_regression over sparse rows; the width is
// spec.inputs. TrainingError for the mlp (no sparse form) and for a spec make_model refuses.
[[nodiscard]] std::unique_ptr<SparseModel> make_sparse_model(const ModelSpec& spec);

// A batch of sparse rows (BatchRows::sparse set) in compact form, and its labels in batch
// order. A batch of 0 rows gives no keys and no rows (an empty pick would mean every row).
void compact_batch(const BatchRows& batch, SparseBatch& out, std::vector<double>& y);

}  // namespace dt::models
