#pragma once
// The model interface. Parameters live in one flat vector of doubles (the wire payload, the
// optimizer's state and model.json all use it); `layout()` names its blocks, each row-major.
// Gradients are hand-derived and checked against central finite differences in the unit tests.
//
// Losses: linear regression and mlp regression use the mean squared error (no 1/2 factor);
// binary tasks the mean binary cross-entropy; multiclass the mean cross-entropy. Every model
// returns SUMS over a batch so that workers' parts add up exactly to the global batch;
// the caller divides by the row count. The L2 penalty 0.5 * l2 * ||weights||^2 (biases excluded)
// is separate: it belongs to the objective once, not to every row.
//
// core/models/: the models, their kernels and the optimizers (no network, no files).
// May use: base/, core/config/.

#include "core/config/config.hpp"
#include "core/models/sparse_batch.hpp"

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowsRef = Eigen::Ref<const RowMatrix>;
using ConstVectorRef = Eigen::Ref<const Eigen::VectorXd>;

struct ModelSpec {
  config::ModelConfig config;
  int inputs = 0;   // feature count
  int classes = 0;  // multiclass tasks: K >= 2; otherwise ignored
};

struct ParamBlock {
  std::string name;                // "weights", "bias", "layers.0.weight", ...
  std::vector<std::int64_t> shape;  // [inputs, outputs] or [outputs]
  std::size_t offset = 0;           // into the flat vector
  std::size_t size = 0;
  bool regularized = false;         // weights yes, biases no
};

// The rows of one batch: rows pick[0], pick[1], ... of x (a shuffled epoch's order), or every
// row of x in order when pick is empty. Row-by-row models read the picked rows where they lie;
// the others gather them once (Model::batch_loss_and_gradient). Sparse rows (`sparse` set): x
// has no columns and the rows are those of `sparse` (pick indexes them; empty: every row).
struct BatchRows {
  ConstRowsRef x;
  ConstVectorRef y;  // one label per row of x
  std::span<const std::uint64_t> pick;
  const CsrView* sparse = nullptr;
  [[nodiscard]] Eigen::Index rows() const noexcept {
    return pick.empty() ? x.rows() : static_cast<Eigen::Index>(pick.size());
  }
};

// The batch's rows copied in order into x and y (grown as needed, never shrunk; an empty batch
// still gets batch.x's columns), as a batch without a pick. A batch without one is returned as is.
[[nodiscard]] BatchRows gather(const BatchRows& batch, RowMatrix& x, Eigen::VectorXd& y);

// Sums over one batch.
struct BatchResult {
  double loss_sum = 0.0;
  double correct = 0.0;  // classification: rows predicted right (argmax / p >= 0.5)
  double squared_error_sum = 0.0;  // regression: sum of (prediction - y)^2
};

class Model {
 public:
  Model();
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  [[nodiscard]] virtual const ModelSpec& spec() const noexcept = 0;
  [[nodiscard]] virtual const std::vector<ParamBlock>& layout() const noexcept = 0;
  [[nodiscard]] std::size_t parameter_count() const noexcept;
  [[nodiscard]] config::Task task() const noexcept;
  [[nodiscard]] int outputs() const noexcept;  // prediction columns: 1, or K for multiclass

  // Initial parameters from the seed (zeros for the convex models; He or Xavier for the MLP).
  virtual void init(std::span<double> params, std::uint64_t seed) const = 0;

  // Loss sum over the rows of x (labels y: value, 0/1, or class index), and ADDS the gradient
  // of that sum to grad_sum (same length as params). Must not allocate once warmed up for a
  // given batch size: models keep their scratch buffers (hence not const, and one model object
  // per thread). A batch of sparse rows runs the sparse model of the same spec
  // (sparse_model.hpp) on its keys and adds the gradient at them: the same sums as the dense
  // rows would give, at the cost of the batch's keys (plus grad_sum's own size).
  virtual BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x,
                                        ConstVectorRef y, std::span<double> grad_sum) = 0;
  // The same on the rows of a batch (see BatchRows). The default gathers picked rows into a
  // buffer the model keeps and calls loss_and_gradient; row-by-row models override it. A
  // picked batch and the same rows gathered by hand give the same bits.
  virtual BatchResult batch_loss_and_gradient(std::span<const double> params,
                                              const BatchRows& batch, std::span<double> grad_sum);
  // Loss sum and metrics only.
  virtual BatchResult evaluate(std::span<const double> params, ConstRowsRef x,
                               ConstVectorRef y) = 0;
  // Predictions, rows x outputs(): the value (regression), P(y = 1) (binary) or class
  // probabilities (multiclass).
  virtual void predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) = 0;

  // 0.5 * l2 * ||regularized blocks||^2, and its gradient added to grad.
  [[nodiscard]] double regularization(std::span<const double> params) const;
  void add_regularization_gradient(std::span<const double> params, std::span<double> grad) const;

 protected:
  // batch_loss_and_gradient of a batch of sparse rows (every override starts with it).
  BatchResult sparse_batch_loss_and_gradient(std::span<const double> params,
                                             const BatchRows& batch, std::span<double> grad_sum);

 private:
  RowMatrix gather_x_;  // batch_loss_and_gradient's default: grows to the largest batch
  Eigen::VectorXd gather_y_;
  struct SparseScratch;  // sparse_step.cpp: the sparse model and its buffers, made on first use
  std::unique_ptr<SparseScratch> sparse_;
};

// One factory for every model type: a new model is one file plus one line here.
[[nodiscard]] std::unique_ptr<Model> make_model(const ModelSpec& spec);

}  // namespace dt::models
