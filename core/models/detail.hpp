#pragma once
// Internals shared by the model files (not part of the module's interface): parameter-block
// maps, the loss "heads" every model ends in, batch checks, and one factory per model file.

#include "base/memory.hpp"
#include "core/models/model.hpp"

#include <cstddef>
#include <memory>
#include <span>

namespace dt::models::detail {

// A row-major view whose rows may be spaced by more than its column count (an Eigen::Ref's
// rows, or the first n rows of a scratch matrix).
using ConstRowsMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

// The same mapping as config::task_of. dt_models does not link dt_config (only dt_util and
// Eigen), so the one-line switch lives here instead of pulling the YAML parser into this library.
[[nodiscard]] config::Task task_for(const config::ModelConfig& model) noexcept;

// The parameter block at `offset` of the flat vector, viewed as a rows x cols row-major matrix.
[[nodiscard]] inline Eigen::Map<const RowMatrix> block(std::span<const double> flat,
                                                       std::size_t offset, Eigen::Index rows,
                                                       Eigen::Index cols) noexcept {
  return {flat.data() + offset, rows, cols};
}
[[nodiscard]] inline Eigen::Map<RowMatrix> block(std::span<double> flat, std::size_t offset,
                                                 Eigen::Index rows, Eigen::Index cols) noexcept {
  return {flat.data() + offset, rows, cols};
}
// The first n rows of x (a batch or a scratch matrix) as a map with x's row spacing.
[[nodiscard]] inline ConstRowsMap rows_of(const RowMatrix& m, Eigen::Index n) noexcept {
  return {m.data(), n, m.cols(), Eigen::OuterStride<>(m.cols())};
}
[[nodiscard]] inline ConstRowsMap rows_of(const ConstRowsRef& x) noexcept {
  return {x.data(), x.rows(), x.cols(), Eigen::OuterStride<>(x.outerStride())};
}

// The loss head of each task, on outputs z (rows x outputs: the prediction for regression, the
// logit for binary, the K logits for multiclass). Returns the batch sums; with `gradient`,
// overwrites z with d(loss_sum)/dz. Multiclass labels must be class indices in [0, K)
// (DataError otherwise: reading them as indices out of range would touch foreign memory).
// `first_row`: the batch row of z's first row, for that error (a model working in chunks).
[[nodiscard]] BatchResult apply_head(config::Task task, Eigen::Ref<RowMatrix> z,
                                     const ConstVectorRef& y, bool gradient,
                                     Eigen::Index first_row = 0);
// Turns outputs into predictions in place: identity, P(y = 1), or the softmax probabilities.
void apply_link(config::Task task, Eigen::Ref<RowMatrix> z);

// TrainingError unless the sizes fit the model: params (and grad when given) hold
// parameter_count() values, x has spec().inputs columns and y one label per row.
void check_batch(const Model& model, std::span<const double> params, const ConstRowsRef& x,
                 const ConstVectorRef* y, const std::span<double>* grad);
// The same for a batch of picked rows, and every picked row lies in x.
void check_batch(const Model& model, std::span<const double> params, const BatchRows& batch,
                 const std::span<double>* grad);
void check_params(const Model& model, std::size_t size, const char* what);

// While row i of a picked (shuffled) batch is copied: asks for the row kGatherAhead picks on,
// every cache line of it (shuffled rows lie anywhere in the shard). A hint: no bit changes.
inline constexpr Eigen::Index kGatherAhead = 4;
DT_PREFETCH void prefetch_picked_row(const BatchRows& batch, Eigen::Index i) {
  if (i + kGatherAhead >= batch.rows()) return;
  const auto row = static_cast<Eigen::Index>(batch.pick[static_cast<std::size_t>(i + kGatherAhead)]);
  const double* next = batch.x.row(row).data();
  for (Eigen::Index c = 0; c < batch.x.cols(); c += 8) __builtin_prefetch(next + c);
}

// TrainingError unless the spec is one make_model accepts (inputs, classes, l2, hidden units).
void validate_spec(const ModelSpec& spec);

// One per model file; make_model validates the spec first.
[[nodiscard]] std::unique_ptr<Model> make_linear_regression(const ModelSpec& spec);
[[nodiscard]] std::unique_ptr<Model> make_logistic_regression(const ModelSpec& spec);
[[nodiscard]] std::unique_ptr<Model> make_softmax_regression(const ModelSpec& spec);
[[nodiscard]] std::unique_ptr<Model> make_mlp(const ModelSpec& spec);

}  // namespace dt::models::detail
