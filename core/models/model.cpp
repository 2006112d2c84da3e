#include "core/models/model.hpp"

#include "core/models/detail.hpp"
#include "base/error.hpp"

#include <cmath>

namespace dt::models {

std::size_t Model::parameter_count() const noexcept {
  const auto& blocks = layout();
  return blocks.empty() ? 0 : blocks.back().offset + blocks.back().size;
}

config::Task Model::task() const noexcept { return detail::task_for(spec().config); }

int Model::outputs() const noexcept {
  return task() == config::Task::kMulticlass ? spec().classes : 1;
}

double Model::regularization(std::span<const double> params) const {
  detail::check_params(*this, params.size(), "the parameter vector");
  const double l2 = spec().config.l2;
  if (l2 == 0.0) return 0.0;
  double sum = 0.0;
  for (const auto& b : layout()) {
    if (!b.regularized) continue;
    const Eigen::Map<const Eigen::VectorXd> w(params.data() + b.offset,
                                              static_cast<Eigen::Index>(b.size));
    sum += w.squaredNorm();
  }
  return 0.5 * l2 * sum;
}

void Model::add_regularization_gradient(std::span<const double> params,
                                        std::span<double> grad) const {
  detail::check_params(*this, params.size(), "the parameter vector");
  detail::check_params(*this, grad.size(), "the gradient");
  const double l2 = spec().config.l2;
  if (l2 == 0.0) return;
  for (const auto& b : layout()) {
    if (!b.regularized) continue;
    const auto n = static_cast<Eigen::Index>(b.size);
    const Eigen::Map<const Eigen::VectorXd> w(params.data() + b.offset, n);
    Eigen::Map<Eigen::VectorXd> g(grad.data() + b.offset, n);
    g += l2 * w;
  }
}

BatchRows gather(const BatchRows& batch, RowMatrix& x, Eigen::VectorXd& y) {
  if (batch.pick.empty()) return batch;
  const auto n = batch.rows();
  if (x.rows() < n || x.cols() != batch.x.cols()) {
    x.resize(n, batch.x.cols());
    y.resize(n);
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    detail::prefetch_picked_row(batch, i);
    const auto row = static_cast<Eigen::Index>(batch.pick[static_cast<std::size_t>(i)]);
    x.row(i) = batch.x.row(row);
    y(i) = batch.y(row);
  }
  return {x.topRows(n), y.head(n), {}};
}

BatchResult Model::batch_loss_and_gradient(std::span<const double> params,
                                           const BatchRows& batch, std::span<double> grad_sum) {
  if (batch.sparse != nullptr) return sparse_batch_loss_and_gradient(params, batch, grad_sum);
  detail::check_batch(*this, params, batch, &grad_sum);
  const auto rows = gather(batch, gather_x_, gather_y_);
  return loss_and_gradient(params, rows.x, rows.y, grad_sum);
}

namespace detail {

config::Task task_for(const config::ModelConfig& model) noexcept { return config::task_of(model); }

void check_params(const Model& model, std::size_t size, const char* what) {
  if (size != model.parameter_count()) {
    fail<TrainingError>("{} has {} values but the model has {} parameters", what, size,
                        model.parameter_count());
  }
}

void check_batch(const Model& model, std::span<const double> params, const ConstRowsRef& x,
                 const ConstVectorRef* y, const std::span<double>* grad) {
  check_params(model, params.size(), "the parameter vector");
  if (grad != nullptr) check_params(model, grad->size(), "the gradient");
  if (x.cols() != model.spec().inputs) {
    fail<TrainingError>("the batch has {} feature columns but the model expects {}", x.cols(),
                        model.spec().inputs);
  }
  if (y != nullptr && y->size() != x.rows()) {
    fail<TrainingError>("the batch has {} rows but {} labels", x.rows(), y->size());
  }
}

void check_batch(const Model& model, std::span<const double> params, const BatchRows& batch,
                 const std::span<double>* grad) {
  check_batch(model, params, batch.x, &batch.y, grad);
  const auto rows = static_cast<std::uint64_t>(batch.x.rows());
  for (const auto row : batch.pick) {
    if (row >= rows) {
      fail<TrainingError>("the batch picks row {} of a shard of {} rows", row, rows);
    }
  }
}

}  // namespace detail

namespace {

const char* type_name(config::ModelType type) {
  switch (type) {
    case config::ModelType::kLinearRegression:
      return "linear_regression";
    case config::ModelType::kLogisticRegression:
      return "logistic_regression";
    case config::ModelType::kSoftmaxRegression:
      return "softmax_regression";
    case config::ModelType::kMlp:
      return "mlp";
  }
  return "model";
}

void validate(const ModelSpec& spec) {
  const char* name = type_name(spec.config.type);
  if (spec.inputs < 1) {
    fail<TrainingError>("{} needs at least 1 input feature, got {}", name, spec.inputs);
  }
  if (detail::task_for(spec.config) == config::Task::kMulticlass && spec.classes < 2) {
    fail<TrainingError>(
        "{} is a multiclass model and needs at least 2 classes, got {}; for two classes "
        "logistic_regression (or mlp with task: binary) fits the same problem",
        name, spec.classes);
  }
  if (!(spec.config.l2 >= 0.0) || !std::isfinite(spec.config.l2)) {
    fail<TrainingError>("{}: l2 must be a finite number >= 0, got {}", name, spec.config.l2);
  }
  if (spec.config.dtype != config::Dtype::kFloat64 && spec.config.type != config::ModelType::kMlp) {
    fail<TrainingError>("{}: dtype float32 is available for mlp only", name);
  }
  if (spec.config.type == config::ModelType::kMlp) {
    for (std::size_t i = 0; i < spec.config.hidden.size(); ++i) {
      if (spec.config.hidden[i] < 1) {
        fail<TrainingError>("mlp hidden layer {} needs at least 1 unit, got {}", i,
                            spec.config.hidden[i]);
      }
    }
  }
}

}  // namespace

void detail::validate_spec(const ModelSpec& spec) { validate(spec); }

std::unique_ptr<Model> make_model(const ModelSpec& spec) {
  validate(spec);
  switch (spec.config.type) {
    case config::ModelType::kLinearRegression:
      return detail::make_linear_regression(spec);
    case config::ModelType::kLogisticRegression:
      return detail::make_logistic_regression(spec);
    case config::ModelType::kSoftmaxRegression:
      return detail::make_softmax_regression(spec);
    case config::ModelType::kMlp:
      return detail::make_mlp(spec);
  }
  fail<TrainingError>("unknown model type {}", static_cast<int>(spec.config.type));
}

}  // namespace dt::models
