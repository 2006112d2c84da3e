// Multi-layer perceptron: hidden layers a = act(a_prev·W + b), then a linear output layer into
// the task's loss head (regression: 1 output; binary: 1 logit; multiclass: K logits).
// Layout: "layers.i.weight" [fan_in, fan_out] and "layers.i.bias" [fan_out], layer by layer.
// Init: relu layers He normal N(0, 2/fan_in), tanh/sigmoid layers and the output layer
// Xavier normal N(0, 2/(fan_in + fan_out)), biases 0; the weight at flat index k is drawn with
// random::normal(seed, kInit, k), so every process and platform gets the same bits.

#include "core/models/activation.hpp"
#include "core/models/detail.hpp"
#include "base/random.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace dt::models::detail {

namespace {

struct Layer {
  Eigen::Index fan_in = 0;
  Eigen::Index fan_out = 0;
  std::size_t weight_offset = 0;
  std::size_t bias_offset = 0;
  bool hidden = false;  // hidden layers are followed by the activation, the output layer not
};

// Threading: one object per thread (the activations are mutable scratch).
class Mlp final : public Model {
 public:
  explicit Mlp(ModelSpec spec)
      : spec_(std::move(spec)),
        task_(task_for(spec_.config)),
        activation_(spec_.config.activation) {
    Eigen::Index fan_in = spec_.inputs;
    std::size_t offset = 0;
    const auto& hidden = spec_.config.hidden;
    for (std::size_t i = 0; i <= hidden.size(); ++i) {
      const bool is_hidden = i < hidden.size();
      const Eigen::Index fan_out = is_hidden ? hidden[i] : outputs();
      const auto w_size = static_cast<std::size_t>(fan_in) * static_cast<std::size_t>(fan_out);
      const auto b_size = static_cast<std::size_t>(fan_out);
      const std::string prefix = "layers." + std::to_string(i);
      layout_.push_back({prefix + ".weight", {fan_in, fan_out}, offset, w_size, true});
      layout_.push_back({prefix + ".bias", {fan_out}, offset + w_size, b_size, false});
      layers_.push_back({fan_in, fan_out, offset, offset + w_size, is_hidden});
      offset += w_size + b_size;
      fan_in = fan_out;
    }
    // Zero rows but the right widths, so that an empty batch still has consistent shapes.
    for (const auto& layer : layers_) {
      activations_.emplace_back(0, layer.fan_out);
      if (layer.hidden) deltas_.emplace_back(0, layer.fan_out);
    }
  }

  [[nodiscard]] const ModelSpec& spec() const noexcept override { return spec_; }
  [[nodiscard]] const std::vector<ParamBlock>& layout() const noexcept override { return layout_; }

  void init(std::span<double> params, std::uint64_t seed) const override {
    check_params(*this, params.size(), "the parameter vector");
    std::fill(params.begin(), params.end(), 0.0);
    for (const auto& layer : layers_) {
      const auto fan_in = static_cast<double>(layer.fan_in);
      const auto fan_out = static_cast<double>(layer.fan_out);
      const bool he = layer.hidden && activation_ == config::Activation::kRelu;
      const double stddev = he ? std::sqrt(2.0 / fan_in) : std::sqrt(2.0 / (fan_in + fan_out));
      const std::size_t end =
          layer.weight_offset + static_cast<std::size_t>(layer.fan_in * layer.fan_out);
      for (std::size_t k = layer.weight_offset; k < end; ++k) {
        params[k] = stddev * random::normal(seed, random::stream::kInit, k);
      }
    }
  }

  BatchResult loss_and_gradient(std::span<const double> params, ConstRowsRef x, ConstVectorRef y,
                                std::span<double> grad_sum) override {
    check_batch(*this, params, x, &y, &grad_sum);
    const Eigen::Index n = x.rows();
    // The deltas grow here, not in forward(): evaluating a large set must not size them too.
    if (delta_rows_ < n) {
      for (auto& m : deltas_) m.resize(n, m.cols());
      delta_rows_ = n;
    }
    forward(params, x);
    const BatchResult result = apply_head(task_, activations_.back().topRows(n), y, true);
    // Backpropagation: the output buffer now holds d(loss)/dz of the last layer; each step
    // turns the layer's delta into its gradient and the previous hidden layer's delta.
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const Layer& layer = layers_[l];
      auto dz = delta_of(l).topRows(n);
      const ConstRowsMap in = input_of(l, x);
      auto gw = block(grad_sum, layer.weight_offset, layer.fan_in, layer.fan_out);
      auto gb = block(grad_sum, layer.bias_offset, 1, layer.fan_out);
      gw.noalias() += in.transpose() * dz;
      gb.row(0) += dz.colwise().sum();
      if (l == 0) break;
      const auto w = block(params, layer.weight_offset, layer.fan_in, layer.fan_out);
      auto prev = deltas_[l - 1].topRows(n);
      prev.noalias() = dz * w.transpose();
      multiply_by_derivative(prev, activations_[l - 1].topRows(n));
    }
    return result;
  }

  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y) override {
    check_batch(*this, params, x, &y, nullptr);
    forward(params, x);
    return apply_head(task_, activations_.back().topRows(x.rows()), y, false);
  }

  void predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) override {
    check_batch(*this, params, x, nullptr, nullptr);
    forward(params, x);
    out = activations_.back().topRows(x.rows());
    apply_link(task_, out);
  }

 private:
  // activations_[l] rows 0..n-1 = the activations of layer l (the raw outputs for the last layer).
  void forward(std::span<const double> params, const ConstRowsRef& x) {
    const Eigen::Index n = x.rows();
    if (activation_rows_ < n) {
      for (auto& m : activations_) m.resize(n, m.cols());
      activation_rows_ = n;
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      const auto w = block(params, layer.weight_offset, layer.fan_in, layer.fan_out);
      const auto b = block(params, layer.bias_offset, 1, layer.fan_out);
      auto z = activations_[l].topRows(n);
      z.noalias() = input_of(l, x) * w;
      z.rowwise() += b.row(0);
      if (layer.hidden) activate(z);
    }
  }

  [[nodiscard]] ConstRowsMap input_of(std::size_t l, const ConstRowsRef& x) const {
    return l == 0 ? rows_of(x) : rows_of(activations_[l - 1], x.rows());
  }
  // The last layer's delta is computed in place in its output buffer.
  [[nodiscard]] RowMatrix& delta_of(std::size_t l) {
    return l + 1 == layers_.size() ? activations_.back() : deltas_[l];
  }

  template <class Block>
  void activate(Block&& z) const {
    detail::activate(activation_, std::forward<Block>(z));
  }
  template <class Delta, class Activations>
  void multiply_by_derivative(Delta&& delta, const Activations& a) const {
    detail::multiply_by_derivative(activation_, std::forward<Delta>(delta), a);
  }

  ModelSpec spec_;
  config::Task task_;
  config::Activation activation_;
  std::vector<ParamBlock> layout_;
  std::vector<Layer> layers_;
  std::vector<RowMatrix> activations_;  // per layer; grow to the largest batch seen, never shrink
  std::vector<RowMatrix> deltas_;       // per hidden layer: d(loss)/d(pre-activation)
  Eigen::Index activation_rows_ = 0;
  Eigen::Index delta_rows_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelSpec& spec) { return std::make_unique<Mlp>(spec); }

}  // namespace dt::models::detail
