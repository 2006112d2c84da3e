#pragma once
// Tensor parallelism: one model split over the T ranks of a tensor-parallel group, every rank
// computing on the same rows. This file is the mathematics only; the network (who the other
// ranks are, how the all-reduce travels) is injected as a GroupAllReduce, so that tests run the
// T slices as threads of one process and compare them with the unsplit model.
//
// How each model splits (rank t of T; "range t" = split_range(n, T, t)):
//
//  * linear, logistic and softmax regression: the weight matrix [inputs, K] by input feature.
//    Rank t holds the rows of its feature range (and reads only those columns of x); it
//    computes partial logits x_t W_t, rank 0 adds the bias, one all-reduce sums them, and then
//    every rank computes the same loss and output gradient dz. Weight gradients stay local
//    (x_t^T dz); rank 0 owns the bias and its gradient.
//
//  * mlp (Megatron-LM style, in this code's [fan_in, fan_out] layout): weight layers are
//    paired from the input: (0, 1), (2, 3), ... In a pair (i, i+1), hidden layer i's units are
//    split: layer i's weight by COLUMNS (its output units; Megatron's "column parallel", the
//    rows of PyTorch's [out, in] matrix) together with its bias, and layer i+1's weight by ROWS
//    (the same units as inputs; "row parallel"). Forward: each rank computes its units'
//    activations locally, then partial outputs a_t W_t of layer i+1 (rank 0 adds layer i+1's
//    bias); ONE all-reduce gives every rank the full pre-activation of layer i+1. Backward: the
//    gradient reaching a pair's input is a partial sum over the split units, so ONE all-reduce
//    per pair sums it, except for the first pair, whose input is x.
//    With an odd number of hidden layers every layer is in a pair; with an even number the
//    output layer is left over and replicated: every rank holds and computes it, rank 0 owns
//    it (reports its gradient). So hidden layers 0, 2, 4, ... are split and need at least T
//    units each; hidden layers 1, 3, ... are computed whole on every rank (they are the
//    all-reduced outputs of a pair). Every rank reads all features of x.
//
// The slice parameter vector of rank t lists its values in the full model's layer order, the
// values it OWNS first and then, on ranks other than 0, the replicated values it only reads.
// Every full parameter is owned by exactly one rank, so the owned parts of the T slices
// partition the full vector: gathering and scattering between the two is a copy, and the
// coordinator can keep the merged, unsplit model.

#include "core/models/model.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace dt::models {

// Sums `values` in place over the T ranks of one tensor-parallel group. Every rank of the group
// calls it the same number of times, in the same order, with spans of the same length; the sums
// must be bit-identical on every rank (a fixed reduction order), since the ranks then compute
// the loss head independently and must agree.
using GroupAllReduce = std::function<void(std::span<double>)>;

// Items [begin, end) of part `part` when `count` items are cut into `parts` contiguous parts
// whose sizes differ by at most one (the first count % parts parts are one larger).
struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  [[nodiscard]] std::int64_t size() const noexcept { return end - begin; }
};
[[nodiscard]] Range split_range(std::int64_t count, int parts, int part);

// DataError unless `model` can be split `tensor` ways over `features` input columns: a linear
// model needs at least one feature per rank, an mlp at least `tensor` units in every split
// hidden layer. The message names the keys to change.
void check_tensor_split(const config::ModelConfig& model, std::int64_t features, int tensor);

// Whether rank slices of this model type read only their feature range of x (the linear models)
// or all features (mlp).
[[nodiscard]] bool splits_features(config::ModelType type) noexcept;

// One contiguous run of the mapping between the full vector and a slice.
struct SliceRun {
  std::size_t full = 0;   // offset in the full vector
  std::size_t slice = 0;  // offset in the slice vector
  std::size_t size = 0;
};

// Rank `rank`'s slice of the model `full` (full.inputs = ALL feature columns). Threading: one
// object per thread (scratch buffers are mutable state). Hot paths allocate nothing once warmed
// up for a given batch size.
class TensorSlice {
 public:
  virtual ~TensorSlice() = default;

  [[nodiscard]] const ModelSpec& spec() const noexcept { return spec_; }
  [[nodiscard]] int tensor() const noexcept { return tensor_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  // Values in this rank's slice vector, and how many of them (a prefix) it owns.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t owned() const noexcept { return owned_; }
  // The columns of the full feature matrix this rank reads; x passed below has exactly these.
  [[nodiscard]] Range features() const noexcept { return features_; }
  [[nodiscard]] const std::vector<SliceRun>& runs() const noexcept { return runs_; }

  // full -> this slice (every value the rank needs, owned or not).
  void gather(std::span<const double> full, std::span<double> slice) const;
  // This slice's OWNED values (slice.size() == owned()) -> their places in `full`: overwritten
  // (scatter) or added (add_owned, used to sum a slice gradient over data-parallel replicas).
  void scatter(std::span<const double> owned, std::span<double> full) const;
  void add_owned(std::span<const double> owned, std::span<double> full) const;

  // The loss sum over the rows of x (which holds features() columns) and ADDS the gradient of
  // that sum to grad_sum (size() values; the non-owned tail receives the same values on every
  // rank and may be ignored). Calls `all_reduce` the same way on every rank of the group; the
  // returned sums are the group's (identical on every rank), not this rank's share.
  virtual BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x,
                                        ConstVectorRef y, std::span<double> grad_sum,
                                        const GroupAllReduce& all_reduce) = 0;
  virtual BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                               const GroupAllReduce& all_reduce) = 0;

 protected:
  TensorSlice(ModelSpec spec, int tensor, int rank);
  // Appends `size` values from `full_offset` to the slice; call in slice order, owned first.
  void add_run(std::size_t full_offset, std::size_t size, bool owned);
  // TrainingError unless params (and grad) have size() values and x and y fit.
  void check(std::span<const double> params, const ConstRowsRef& x, const ConstVectorRef& y,
             const std::span<double>* grad) const;

  ModelSpec spec_;
  int tensor_;
  int rank_;
  Range features_;

 private:
  std::vector<SliceRun> runs_;
  std::size_t size_ = 0;
  std::size_t owned_ = 0;
};

// TrainingError for a rank outside [0, tensor); check_tensor_split's errors for a model that
// cannot be split this way.
[[nodiscard]] std::unique_ptr<TensorSlice> make_tensor_slice(const ModelSpec& full, int tensor,
                                                             int rank);

}  // namespace dt::models
