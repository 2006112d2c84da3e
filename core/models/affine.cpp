#include "core/models/affine.hpp"

#include "core/models/kernels.hpp"

#include <algorithm>
#include <utility>

namespace dt::models::detail {

namespace {

// Rows whose outputs are computed, turned into dloss/doutput by the head, then multiplied back
// into the gradient while they are still in the cache: each row is read from memory once.
// Single-output models (linear, logistic) take few rows at a time, so the backward pass finds
// them in L1 (64 rows of 100 features do not fit it), and four rows per pass over the gradient.
// (The sizes live in affine.hpp: the sparse models sum in the same order.)
constexpr Eigen::Index kChunk = kAffineChunk;
constexpr Eigen::Index kSingleChunk = kAffineSingleChunk;
static_assert(kSingleChunk % 4 == 0 && kSingleChunk <= kChunk);
// How many rows ahead of the one being computed a shuffled batch's rows are fetched, into L2
// (locality hint 1): fetched into L1 they hold its few miss buffers, and fewer rows are on the
// way at once (random 800-byte rows: 126 against 94 ns a row, measured on an EPYC VM).
constexpr Eigen::Index kPrefetchAhead = 8;

}  // namespace

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
      scratch_(kChunk, outputs_),
      labels_(kChunk) {}

void AffineModel::init(std::span<double> params, std::uint64_t /*seed*/) const {
  check_params(*this, params.size(), "the parameter vector");
  // Zeros: the losses are convex, so there is no symmetry to break.
  std::fill(params.begin(), params.end(), 0.0);
}

void AffineModel::forward(std::span<const double> params, const ConstRowsRef& x_all,
                          std::span<const std::uint64_t> pick, Eigen::Index first,
                          Eigen::Index count, Eigen::Ref<RowMatrix> z) const {
  const double* w = params.data() + layout_[0].offset;  // inputs x outputs, row-major
  const double* b = params.data() + layout_[1].offset;
  const auto p = static_cast<std::size_t>(inputs_);
  const auto k = static_cast<std::size_t>(outputs_);
  const Eigen::Index rows = pick.empty() ? x_all.rows() : static_cast<Eigen::Index>(pick.size());
  for (Eigen::Index i = 0; i < count; ++i) {
    // Picked rows lie anywhere in the shard, beyond the hardware prefetcher's sight: ask for a
    // row a few ahead, every cache line of it, so its load overlaps this row's arithmetic.
    if (!pick.empty() && first + i + kPrefetchAhead < rows) {
      const auto* ahead = reinterpret_cast<const char*>(row(x_all, pick, first + i + kPrefetchAhead));
      for (std::size_t b = 0; b < p * sizeof(double); b += 64) __builtin_prefetch(ahead + b, 0, 1);
    }
    const double* x = row(x_all, pick, first + i);
    double* out = &z(i, 0);
    if (k == 1) {
      out[0] = kernels::dot(x, w, p) + b[0];
      continue;
    }
    std::fill(out, out + k, 0.0);
    kernels::add_row_times(x, w, p, k, out);
    for (std::size_t c = 0; c < k; ++c) out[c] += b[c];
  }
}

BatchResult AffineModel::pass(std::span<const double> params, const BatchRows& batch,
                              double* grad_sum) {
  const auto p = static_cast<std::size_t>(inputs_);
  const auto k = static_cast<std::size_t>(outputs_);
  double* gw = grad_sum == nullptr ? nullptr : grad_sum + layout_[0].offset;
  double* gb = grad_sum == nullptr ? nullptr : grad_sum + layout_[1].offset;
  BatchResult total;
  const Eigen::Index n = batch.rows();
  const Eigen::Index chunk = k == 1 ? kSingleChunk : kChunk;
  for (Eigen::Index first = 0; first < n; first += chunk) {
    const Eigen::Index count = std::min(chunk, n - first);
    auto z = scratch_.topRows(count);
    // A picked row's label lies as far from the last one as its features: fetched ahead too
    // (a miss per row otherwise; 8% of a shuffled linreg step).
    if (!batch.pick.empty()) {
      const Eigen::Index ahead_end = std::min(n, first + count + kPrefetchAhead);
      for (Eigen::Index i = first + kPrefetchAhead; i < ahead_end; ++i) {
        __builtin_prefetch(batch.y.data() + row_index(batch.pick, i), 0, 1);
      }
    }
    forward(params, batch.x, batch.pick, first, count, z);
    for (Eigen::Index i = 0; i < count; ++i) labels_(i) = batch.y(row_index(batch.pick, first + i));
    const BatchResult r = apply_head(task_, z, labels_.head(count), gw != nullptr, first);
    total.loss_sum += r.loss_sum;
    total.correct += r.correct;
    total.squared_error_sum += r.squared_error_sum;
    if (gw == nullptr) continue;
    if (k == 1) {
      single_backward(batch, first, count, z, gw, gb);
      continue;
    }
    for (Eigen::Index i = 0; i < count; ++i) {
      const double* x = row(batch.x, batch.pick, first + i);
      const double* dz = &z(i, 0);
      if (k == 1) {
        kernels::axpy(dz[0], x, gw, p);
        gb[0] += dz[0];
        continue;
      }
      kernels::add_outer(x, p, dz, k, gw);
      for (std::size_t c = 0; c < k; ++c) gb[c] += dz[c];
    }
  }
  return total;
}

void AffineModel::single_backward(const BatchRows& batch, Eigen::Index first, Eigen::Index count,
                                  const Eigen::Ref<RowMatrix>& dz, double* gw, double* gb) const {
  const auto p = static_cast<std::size_t>(inputs_);
  // Rows in fours by their place in the batch (the chunk starts at a multiple of 4), so the
  // grouping, and with it the bits, depends only on the batch.
  Eigen::Index i = 0;
  for (; i + 4 <= count; i += 4) {
    const double alpha[4] = {dz(i, 0), dz(i + 1, 0), dz(i + 2, 0), dz(i + 3, 0)};
    const double* rows[4] = {row(batch.x, batch.pick, first + i),
                             row(batch.x, batch.pick, first + i + 1),
                             row(batch.x, batch.pick, first + i + 2),
                             row(batch.x, batch.pick, first + i + 3)};
    kernels::axpy4(alpha, rows, gw, p);
    for (const double a : alpha) gb[0] += a;
  }
  for (; i < count; ++i) {
    kernels::axpy(dz(i, 0), row(batch.x, batch.pick, first + i), gw, p);
    gb[0] += dz(i, 0);
  }
}

BatchResult AffineModel::loss_and_gradient(std::span<const double> params, ConstRowsRef x,
                                           ConstVectorRef y, std::span<double> grad_sum) {
  check_batch(*this, params, x, &y, &grad_sum);
  return pass(params, BatchRows{x, y, {}}, grad_sum.data());
}

BatchResult AffineModel::batch_loss_and_gradient(std::span<const double> params,
                                                 const BatchRows& batch,
                                                 std::span<double> grad_sum) {
  if (batch.sparse != nullptr) return sparse_batch_loss_and_gradient(params, batch, grad_sum);
  check_batch(*this, params, batch, &grad_sum);
  return pass(params, batch, grad_sum.data());
}

BatchResult AffineModel::evaluate(std::span<const double> params, ConstRowsRef x,
                                  ConstVectorRef y) {
  check_batch(*this, params, x, &y, nullptr);
  return pass(params, BatchRows{x, y, {}}, nullptr);
}

void AffineModel::predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) {
  check_batch(*this, params, x, nullptr, nullptr);
  out.resize(x.rows(), outputs_);
  forward(params, x, {}, 0, x.rows(), out);
  apply_link(task_, out);
}

}  // namespace detail
