#include "core/models/sparse_model.hpp"

#include "core/models/affine.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <utility>

namespace dt::models {

namespace {

// The dense dot product's lanes (kernels.hpp): feature i adds into lane i mod 8, and the lanes
// add up in this order. A row's nonzeros in ascending key order reproduce it exactly: the
// dense kernel's other terms are zeros, which change no sum.
constexpr std::uint32_t kDotLanes = 8;

double lane_sum(const double* acc) noexcept {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

}  // namespace

SparseModel::SparseModel(ModelSpec spec)
    : spec_(std::move(spec)),
      task_(detail::task_for(spec_.config)),
      width_(static_cast<std::uint64_t>(spec_.inputs)),
      outputs_(task_ == config::Task::kMulticlass ? static_cast<std::size_t>(spec_.classes) : 1),
      scratch_(detail::kAffineChunk, static_cast<Eigen::Index>(outputs_)) {}

void SparseModel::check(std::span<const double> local, const SparseBatch& batch,
                        const std::span<const double>* y, const std::span<double>* grad) const {
  const std::size_t want = local_count(batch);
  if (local.size() != want) {
    fail<TrainingError>("the local parameter vector has {} values but the batch's {} keys need {}",
                        local.size(), batch.keys.size(), want);
  }
  if (grad != nullptr && grad->size() != want) {
    fail<TrainingError>("the local gradient has {} values but the batch's {} keys need {}",
                        grad->size(), batch.keys.size(), want);
  }
  const std::uint64_t nonzeros = batch.row_start.empty() ? 0 : batch.row_start.back();
  if ((!batch.row_start.empty() && batch.row_start.front() != 0) ||
      nonzeros != batch.local.size() || (batch.ones ? 0 : nonzeros) != batch.values.size()) {
    fail<TrainingError>("the sparse batch is malformed: {} row starts for {} local keys and {} "
                        "values (build it with compact)",
                        batch.row_start.size(), batch.local.size(), batch.values.size());
  }
  if (!batch.keys.empty() && batch.keys.back() >= width_) {
    fail<TrainingError>("the batch has feature key {} but the model's width is {}",
                        batch.keys.back(), width_);
  }
  if (y != nullptr && y->size() != batch.rows()) {
    fail<TrainingError>("the batch has {} rows but {} labels", batch.rows(), y->size());
  }
}

void SparseModel::forward(std::span<const double> local, const SparseBatch& batch,
                          std::size_t first, std::size_t count, double* z) const {
  if (batch.ones) {
    forward_rows<true>(local, batch, first, count, z);
  } else {
    forward_rows<false>(local, batch, first, count, z);
  }
}

template <bool kOnes>
void SparseModel::forward_rows(std::span<const double> local, const SparseBatch& batch,
                               std::size_t first, std::size_t count, double* z) const {
  const std::size_t k = outputs_;
  const double* w = local.data();
  const double* b = local.data() + batch.keys.size() * k;
  const std::uint32_t* keys = batch.keys.data();
  const std::uint32_t* at = batch.local.data();
  const double* values = batch.values.data();
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t begin = batch.row_start[first + i];
    const std::uint64_t end = batch.row_start[first + i + 1];
    double* out = z + i * k;
    if (k == 1) {
      double acc[kDotLanes] = {};
      for (std::uint64_t j = begin; j < end; ++j) {
        acc[keys[at[j]] % kDotLanes] += kOnes ? w[at[j]] : values[j] * w[at[j]];
      }
      out[0] = lane_sum(acc) + b[0];
      continue;
    }
    std::fill(out, out + k, 0.0);
    for (std::uint64_t j = begin; j < end; ++j) {
      const double* row = w + std::size_t{at[j]} * k;
      if (kOnes) {
        for (std::size_t c = 0; c < k; ++c) out[c] += row[c];
      } else {
        const double v = values[j];
        for (std::size_t c = 0; c < k; ++c) out[c] += v * row[c];
      }
    }
    for (std::size_t c = 0; c < k; ++c) out[c] += b[c];
  }
}

BatchResult SparseModel::pass(std::span<const double> local, const SparseBatch& batch,
                              std::span<const double> y, double* grad) {
  const std::size_t k = outputs_;
  const std::size_t n = batch.rows();
  double* gw = grad;
  double* gb = grad == nullptr ? nullptr : grad + batch.keys.size() * k;
  if (k == 1 && grad != nullptr && quad_.size() < batch.keys.size() * 4) {
    quad_.resize(batch.keys.size() * 4, 0.0);  // new slots zero, old ones are zero already
  }
  // The dense model's chunks, so that the chunk sums add up in its order.
  const auto chunk = static_cast<std::size_t>(k == 1 ? detail::kAffineSingleChunk
                                                     : detail::kAffineChunk);
  BatchResult total;
  for (std::size_t first = 0; first < n; first += chunk) {
    const std::size_t count = std::min(chunk, n - first);
    auto z = scratch_.topRows(static_cast<Eigen::Index>(count));
    forward(local, batch, first, count, z.data());
    const Eigen::Map<const Eigen::VectorXd> labels(y.data() + first,
                                                   static_cast<Eigen::Index>(count));
    const BatchResult r = detail::apply_head(task_, z, labels, gw != nullptr,
                                             static_cast<Eigen::Index>(first));
    total.loss_sum += r.loss_sum;
    total.correct += r.correct;
    total.squared_error_sum += r.squared_error_sum;
    if (gw == nullptr) continue;
    if (k == 1 && batch.ones) {
      single_backward<true>(batch, first, count, z.data(), gw, gb);
    } else if (k == 1) {
      single_backward<false>(batch, first, count, z.data(), gw, gb);
    } else if (batch.ones) {
      multi_backward<true>(batch, first, count, z.data(), gw, gb);
    } else {
      multi_backward<false>(batch, first, count, z.data(), gw, gb);
    }
  }
  return total;
}

template <bool kOnes>
void SparseModel::multi_backward(const SparseBatch& batch, std::size_t first, std::size_t count,
                                 const double* dz_rows, double* gw, double* gb) const {
  const std::size_t k = outputs_;
  for (std::size_t i = 0; i < count; ++i) {
    const double* dz = dz_rows + i * k;
    for (std::uint64_t j = batch.row_start[first + i]; j < batch.row_start[first + i + 1]; ++j) {
      double* g = gw + std::size_t{batch.local[j]} * k;
      if (kOnes) {
        for (std::size_t c = 0; c < k; ++c) g[c] += dz[c];
      } else {
        const double v = batch.values[j];
        for (std::size_t c = 0; c < k; ++c) g[c] += v * dz[c];
      }
    }
    for (std::size_t c = 0; c < k; ++c) gb[c] += dz[c];
  }
}

template <bool kOnes>
void SparseModel::single_backward(const SparseBatch& batch, std::size_t first, std::size_t count,
                                  const double* dz, double* gw, double* gb) {
  const std::uint32_t* at = batch.local.data();
  const double* values = batch.values.data();
  const std::uint64_t* starts = batch.row_start.data() + first;
  double* quad = quad_.data();
  // The dense kernel adds four rows at a time: g += (a0 x0 + a1 x1) + (a2 x2 + a3 x3). Each
  // row's terms go to its slot of the key's four, then each key touched adds its four in that
  // grouping (a slot no row filled holds +0, as the dense kernel's a * 0 is a zero) and clears
  // them; a key met again in the group adds zeros.
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (std::size_t s = 0; s < 4; ++s) {
      const double a = dz[i + s];
      for (std::uint64_t j = starts[i + s]; j < starts[i + s + 1]; ++j) {
        quad[std::size_t{at[j]} * 4 + s] += kOnes ? a : a * values[j];
      }
    }
    for (std::uint64_t j = starts[i]; j < starts[i + 4]; ++j) {
      double* q = quad + std::size_t{at[j]} * 4;
      gw[at[j]] += (q[0] + q[1]) + (q[2] + q[3]);
      q[0] = q[1] = q[2] = q[3] = 0.0;
    }
    for (std::size_t s = 0; s < 4; ++s) gb[0] += dz[i + s];
  }
  for (; i < count; ++i) {
    const double a = dz[i];
    for (std::uint64_t j = starts[i]; j < starts[i + 1]; ++j) gw[at[j]] += kOnes ? a : a * values[j];
    gb[0] += a;
  }
}

BatchResult SparseModel::loss_and_gradient(std::span<const double> local,
                                           const SparseBatch& batch, std::span<const double> y,
                                           std::span<double> local_grad) {
  check(local, batch, &y, &local_grad);
  return pass(local, batch, y, local_grad.data());
}

BatchResult SparseModel::evaluate(std::span<const double> local, const SparseBatch& batch,
                                  std::span<const double> y) {
  check(local, batch, &y, nullptr);
  return pass(local, batch, y, nullptr);
}

void SparseModel::predict(std::span<const double> local, const SparseBatch& batch,
                          RowMatrix& out) {
  check(local, batch, nullptr, nullptr);
  out.resize(static_cast<Eigen::Index>(batch.rows()), static_cast<Eigen::Index>(outputs_));
  forward(local, batch, 0, batch.rows(), out.data());
  detail::apply_link(task_, out);
}

double SparseModel::regularization(std::span<const double> local,
                                   const SparseBatch& batch) const {
  check(local, batch, nullptr, nullptr);
  const double l2 = spec_.config.l2;
  if (l2 == 0.0) return 0.0;
  double sum = 0.0;
  for (std::size_t i = 0; i < batch.keys.size() * outputs_; ++i) sum += local[i] * local[i];
  return 0.5 * l2 * sum;
}

void SparseModel::add_regularization_gradient(std::span<const double> local,
                                              const SparseBatch& batch,
                                              std::span<double> local_grad) const {
  check(local, batch, nullptr, &local_grad);
  const double l2 = spec_.config.l2;
  if (l2 == 0.0) return;
  for (std::size_t i = 0; i < batch.keys.size() * outputs_; ++i) local_grad[i] += l2 * local[i];
}

std::unique_ptr<SparseModel> make_sparse_model(const ModelSpec& spec) {
  if (spec.config.type == config::ModelType::kMlp) {
    fail<TrainingError>(
        "mlp has no sparse form: sparse rows train linear_regression, logistic_regression or "
        "softmax_regression (or give the mlp dense input)");
  }
  detail::validate_spec(spec);
  return std::make_unique<SparseModel>(spec);
}

}  // namespace dt::models
