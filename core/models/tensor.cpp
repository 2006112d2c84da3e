// The parts of tensor parallelism every model shares: ranges, the split checks, the mapping
// between the full parameter vector and a slice, and the factory. The arithmetic of each model's
// slice is in tensor_affine.cpp and tensor_mlp.cpp.

#include "core/models/tensor.hpp"

#include "core/models/tensor_detail.hpp"
#include "base/error.hpp"

#include <algorithm>

namespace dt::models {

Range split_range(std::int64_t count, int parts, int part) {
  const auto p = static_cast<std::int64_t>(parts);
  const auto i = static_cast<std::int64_t>(part);
  const std::int64_t base = count / p;
  const std::int64_t extra = count % p;
  const std::int64_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

bool splits_features(config::ModelType type) noexcept { return type != config::ModelType::kMlp; }

void check_tensor_split(const config::ModelConfig& model, std::int64_t features, int tensor) {
  if (tensor < 1) fail<ConfigError>("parallelism.tensor must be at least 1, got {}", tensor);
  if (tensor == 1) return;
  if (splits_features(model.type)) {
    if (features < tensor) {
      fail<DataError>("parallelism.tensor = {} splits {} by input feature, but the data has only "
                      "{} feature column{}; use parallelism.tensor <= {}",
                      tensor, config::name_of(model.type), features, features == 1 ? "" : "s",
                      features);
    }
    return;
  }
  // Hidden layers 0, 2, 4, ... are split (see tensor.hpp).
  for (std::size_t i = 0; i < model.hidden.size(); i += 2) {
    if (model.hidden[i] < tensor) {
      fail<ConfigError>("parallelism.tensor = {} splits mlp hidden layer {} (model.hidden[{}]) "
                        "into {} parts, but it has only {} unit{}; use parallelism.tensor <= {} "
                        "or a wider layer",
                        tensor, i, i, tensor, model.hidden[i], model.hidden[i] == 1 ? "" : "s",
                        model.hidden[i]);
    }
  }
}

TensorSlice::TensorSlice(ModelSpec spec, int tensor, int rank)
    : spec_(std::move(spec)), tensor_(tensor), rank_(rank), features_{0, spec_.inputs} {}

void TensorSlice::add_run(std::size_t full_offset, std::size_t size, bool owned) {
  if (size == 0) return;
  if (owned && owned_ != size_) {
    fail<TrainingError>("tensor slice layout: an owned run after a replicated one");
  }
  runs_.push_back({full_offset, size_, size});
  size_ += size;
  if (owned) owned_ += size;
}

void TensorSlice::gather(std::span<const double> full, std::span<double> slice) const {
  if (slice.size() != size_) {
    fail<TrainingError>("tensor rank {}: the slice buffer has {} values, the slice {}", rank_,
                        slice.size(), size_);
  }
  for (const auto& run : runs_) {
    if (run.full + run.size > full.size()) {
      fail<TrainingError>("tensor rank {}: the full parameter vector has {} values, too few for "
                          "this model", rank_, full.size());
    }
    std::copy_n(full.begin() + static_cast<std::ptrdiff_t>(run.full), run.size,
                slice.begin() + static_cast<std::ptrdiff_t>(run.slice));
  }
}

namespace {

template <class Op>
void for_owned(const TensorSlice& s, std::span<const double> owned, std::span<double> full,
               Op op) {
  if (owned.size() != s.owned()) {
    fail<TrainingError>("tensor rank {}: {} owned values given, the slice owns {}", s.rank(),
                        owned.size(), s.owned());
  }
  for (const auto& run : s.runs()) {
    if (run.slice >= s.owned()) break;  // owned runs come first
    if (run.full + run.size > full.size()) {
      fail<TrainingError>("tensor rank {}: the full vector has {} values, too few for this model",
                          s.rank(), full.size());
    }
    for (std::size_t k = 0; k < run.size; ++k) op(full[run.full + k], owned[run.slice + k]);
  }
}

}  // namespace

void TensorSlice::scatter(std::span<const double> owned, std::span<double> full) const {
  for_owned(*this, owned, full, [](double& to, double from) { to = from; });
}

void TensorSlice::add_owned(std::span<const double> owned, std::span<double> full) const {
  for_owned(*this, owned, full, [](double& to, double from) { to += from; });
}

void TensorSlice::check(std::span<const double> params, const ConstRowsRef& x,
                        const ConstVectorRef& y, const std::span<double>* grad) const {
  if (params.size() != size_) {
    fail<TrainingError>("tensor rank {}: the parameter slice has {} values, expected {}", rank_,
                        params.size(), size_);
  }
  if (grad != nullptr && grad->size() != size_) {
    fail<TrainingError>("tensor rank {}: the gradient slice has {} values, expected {}", rank_,
                        grad->size(), size_);
  }
  if (x.cols() != features_.size()) {
    fail<TrainingError>("tensor rank {}: the batch has {} feature columns but the slice reads {}",
                        rank_, x.cols(), features_.size());
  }
  if (y.size() != x.rows()) {
    fail<TrainingError>("tensor rank {}: the batch has {} rows but {} labels", rank_, x.rows(),
                        y.size());
  }
}

std::unique_ptr<TensorSlice> make_tensor_slice(const ModelSpec& full, int tensor, int rank) {
  if (tensor < 1 || rank < 0 || rank >= tensor) {
    fail<TrainingError>("tensor rank {} is outside [0, {})", rank, tensor);
  }
  check_tensor_split(full.config, full.inputs, tensor);
  // The config refuses it first (model.dtype); this guards every other caller.
  if (full.config.dtype != config::Dtype::kFloat64) {
    fail<TrainingError>("tensor-parallel slices compute in float64 only; use dtype float64");
  }
  // The unsplit model validates the spec and gives the full layout the slices map into.
  const auto model = make_model(full);
  if (splits_features(full.config.type)) return detail::make_affine_slice(*model, tensor, rank);
  return detail::make_mlp_slice(*model, tensor, rank);
}

}  // namespace dt::models
