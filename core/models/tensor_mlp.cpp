// Tensor-parallel slice of the mlp, Megatron-LM style (see tensor.hpp for the split).
// Weight layers are paired from the input: layer i even and < H (H hidden layers) is a COLUMN
// layer (its output units split, bias split with them), layer i odd is a ROW layer (its input
// units split, its bias owned by rank 0 and added before the all-reduce), and layer H when H is
// even (the output layer left over) is REPLICATED. Rank t's slice vector lists, layer by layer,
// its column-layer weights [fan_in, units_t] (row-major) and biases [units_t], its row-layer
// weight rows [units_t, fan_out] (and on rank 0 the bias), and last the replicated layer's
// weight and bias (owned by rank 0, read by every rank).

#include "core/models/activation.hpp"
#include "core/models/detail.hpp"
#include "core/models/tensor_detail.hpp"

#include <optional>

namespace dt::models::detail {
namespace {

enum class Kind { kColumn, kRow, kReplicated };

struct SliceLayer {
  Kind kind = Kind::kReplicated;
  Eigen::Index in = 0;   // input width this rank sees
  Eigen::Index out = 0;  // output width this rank computes
  std::size_t weight = 0;             // slice offset of the [in, out] weight
  std::optional<std::size_t> bias;    // slice offset of the [out] bias, if this rank holds it
  bool hidden = false;
};

class MlpSlice final : public TensorSlice {
 public:
  MlpSlice(const Model& full, int tensor, int rank)
      : TensorSlice(full.spec(), tensor, rank),
        task_(full.task()),
        activation_(spec_.config.activation) {
    const auto& hidden = spec_.config.hidden;
    const std::size_t h = hidden.size();
    const auto& layout = full.layout();  // per layer: weight [fan_in, fan_out], bias [fan_out]
    Range units{};                       // the split units of the previous column layer
    std::size_t offset = 0;              // slice offset of the next run
    auto take = [&](std::size_t full_offset, std::size_t size, bool owned) {
      add_run(full_offset, size, owned);
      const std::size_t at = offset;
      offset += size;
      return at;
    };
    for (std::size_t l = 0; l <= h; ++l) {
      const auto& w = layout[2 * l];
      const auto& b = layout[2 * l + 1];
      const auto fan_in = static_cast<std::size_t>(w.shape[0]);
      const auto fan_out = static_cast<std::size_t>(w.shape[1]);
      SliceLayer layer;
      layer.hidden = l < h;
      layer.kind = l % 2 == 1 ? Kind::kRow : (l < h ? Kind::kColumn : Kind::kReplicated);
      switch (layer.kind) {
        case Kind::kColumn: {
          units = split_range(static_cast<std::int64_t>(fan_out), tensor, rank);
          const auto u = static_cast<std::size_t>(units.size());
          const auto first = static_cast<std::size_t>(units.begin);
          layer.in = static_cast<Eigen::Index>(fan_in);
          layer.out = units.size();
          // One run per weight row: columns [first, first + u) of row r.
          layer.weight = offset;
          for (std::size_t r = 0; r < fan_in; ++r) take(w.offset + r * fan_out + first, u, true);
          layer.bias = take(b.offset + first, u, true);
          break;
        }
        case Kind::kRow: {
          const auto u = static_cast<std::size_t>(units.size());
          layer.in = units.size();
          layer.out = static_cast<Eigen::Index>(fan_out);
          layer.weight = take(w.offset + static_cast<std::size_t>(units.begin) * fan_out,
                              u * fan_out, true);
          if (rank == 0) layer.bias = take(b.offset, fan_out, true);
          break;
        }
        case Kind::kReplicated:
          layer.in = static_cast<Eigen::Index>(fan_in);
          layer.out = static_cast<Eigen::Index>(fan_out);
          layer.weight = take(w.offset, w.size, rank == 0);
          layer.bias = take(b.offset, b.size, rank == 0);
          break;
      }
      layers_.push_back(layer);
      activations_.emplace_back(0, layer.out);
      deltas_.emplace_back(0, layer.hidden ? layer.out : 0);
    }
  }

  BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                                std::span<double> grad_sum,
                                const GroupAllReduce& all_reduce) override {
    check(params, x, y, &grad_sum);
    const Eigen::Index n = x.rows();
    if (delta_rows_ < n) {
      for (std::size_t l = 0; l < layers_.size(); ++l) {
        if (layers_[l].hidden) deltas_[l].resize(n, layers_[l].out);
      }
      delta_rows_ = n;
    }
    forward(params, x, all_reduce);
    const BatchResult result = apply_head(task_, activations_.back().topRows(n), y, true);
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const SliceLayer& layer = layers_[l];
      auto dz = delta_of(l).topRows(n);
      const ConstRowsMap in = input_of(l, x);
      auto gw = block(grad_sum, layer.weight, layer.in, layer.out);
      gw.noalias() += in.transpose() * dz;
      if (layer.bias) block(grad_sum, *layer.bias, 1, layer.out).row(0) += dz.colwise().sum();
      if (l == 0) break;
      const auto w = block(params, layer.weight, layer.in, layer.out);
      auto prev = deltas_[l - 1].topRows(n);
      prev.noalias() = dz * w.transpose();
      // A column layer's input is whole on every rank, but each rank's product covers only its
      // units: the sum over the group is the gradient (Megatron's backward all-reduce).
      if (layer.kind == Kind::kColumn) all_reduce(span_of(deltas_[l - 1], n));
      multiply_by_derivative(activation_, prev, activations_[l - 1].topRows(n));
    }
    return result;
  }

  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                       const GroupAllReduce& all_reduce) override {
    check(params, x, y, nullptr);
    forward(params, x, all_reduce);
    return apply_head(task_, activations_.back().topRows(x.rows()), y, false);
  }

 private:
  // The top n rows of a row-major matrix, as one contiguous span.
  static std::span<double> span_of(RowMatrix& m, Eigen::Index n) {
    return {m.data(), static_cast<std::size_t>(n * m.cols())};
  }

  void forward(std::span<const double> params, const ConstRowsRef& x,
               const GroupAllReduce& all_reduce) {
    const Eigen::Index n = x.rows();
    if (activation_rows_ < n) {
      for (auto& m : activations_) m.resize(n, m.cols());
      activation_rows_ = n;
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const SliceLayer& layer = layers_[l];
      const auto w = block(params, layer.weight, layer.in, layer.out);
      auto z = activations_[l].topRows(n);
      z.noalias() = input_of(l, x) * w;
      if (layer.bias) z.rowwise() += block(params, *layer.bias, 1, layer.out).row(0);
      // A row layer's product covers this rank's input units only (rank 0 has added the bias):
      // the sum over the group is the layer's pre-activation.
      if (layer.kind == Kind::kRow) all_reduce(span_of(activations_[l], n));
      if (layer.hidden) activate(activation_, z);
    }
  }

  [[nodiscard]] ConstRowsMap input_of(std::size_t l, const ConstRowsRef& x) const {
    return l == 0 ? rows_of(x) : rows_of(activations_[l - 1], x.rows());
  }
  // The last layer's delta is computed in place in its output buffer.
  [[nodiscard]] RowMatrix& delta_of(std::size_t l) {
    return l + 1 == layers_.size() ? activations_.back() : deltas_[l];
  }

  config::Task task_;
  config::Activation activation_;
  std::vector<SliceLayer> layers_;
  std::vector<RowMatrix> activations_;  // per layer (this rank's width); grow, never shrink
  std::vector<RowMatrix> deltas_;       // per hidden layer: d(loss)/d(pre-activation)
  Eigen::Index activation_rows_ = 0;
  Eigen::Index delta_rows_ = 0;
};

}  // namespace

std::unique_ptr<TensorSlice> make_mlp_slice(const Model& full, int tensor, int rank) {
  return std::make_unique<MlpSlice>(full, tensor, rank);
}

}  // namespace dt::models::detail
