// Multi-layer perceptron: hidden layers a = act(a_prev·W + b), then a linear output layer into
// the task's loss head (regression: 1 output; binary: 1 logit; multiclass: K logits).
// Layout: "layers.i.weight" [fan_in, fan_out] and "layers.i.bias" [fan_out], layer by layer.
// Init: relu layers He normal N(0, 2/fan_in), tanh/sigmoid layers and the output layer
// Xavier normal N(0, 2/(fan_in + fan_out)), biases 0; the weight at flat index k is drawn with
// random::normal(seed, kInit, k), so every process and platform gets the same bits.
//
// model.dtype float32 (Mlp<float>): the layers' products, activations and deltas are floats
// (sgemm instead of dgemm: twice the rate, half the bytes). The weights are converted once a
// call (one call is a worker's part of one step) and the batch's rows as they are read; the
// loss head, the gradient's sums and the bias sums are taken in double and added to grad_sum,
// which stays double like the parameters, so the exchange, optimizer and files do not change.
// Mlp<double> is the float64 model, the same operations as before the template.

#include "core/models/activation.hpp"
#include "core/models/detail.hpp"
#include "base/random.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
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
template <class Scalar>
class Mlp final : public Model {
  // float converts parameters and rows into its own buffers; double reads them where they lie.
  static constexpr bool kConverts = !std::is_same_v<Scalar, double>;
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowsMap = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

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
      if (kConverts) weight_grads_.emplace_back(layer.fan_in, layer.fan_out);
    }
    if (kConverts) {
      params_.resize(offset);
      x_.resize(0, spec_.inputs);
      head_.resize(0, outputs());
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
    return step(params, inputs(x), y, grad_sum);
  }

  // float: the picked rows are converted as they are gathered (one copy, not two); the same
  // bits as gathering them by hand, since a conversion is exact element by element.
  BatchResult batch_loss_and_gradient(std::span<const double> params, const BatchRows& batch,
                                      std::span<double> grad_sum) override {
    if (!kConverts || batch.sparse != nullptr || batch.pick.empty()) {
      return Model::batch_loss_and_gradient(params, batch, grad_sum);
    }
    check_batch(*this, params, batch, &grad_sum);
    const Eigen::Index n = batch.rows();
    grow_inputs(n);
    if (y_.size() < n) y_.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      prefetch_picked_row(batch, i);  // while this row converts
      const auto row = static_cast<Eigen::Index>(batch.pick[static_cast<std::size_t>(i)]);
      x_.row(i) = batch.x.row(row).template cast<Scalar>();
      y_(i) = batch.y(row);
    }
    return step(params, rows_map(x_, n), y_.head(n), grad_sum);
  }

  BatchResult evaluate(std::span<const double> params, ConstRowsRef x, ConstVectorRef y) override {
    check_batch(*this, params, x, &y, nullptr);
    forward(compute_params(params), inputs(x));
    return head(x.rows(), y, false);
  }

  void predict(std::span<const double> params, ConstRowsRef x, RowMatrix& out) override {
    check_batch(*this, params, x, nullptr, nullptr);
    forward(compute_params(params), inputs(x));
    out = activations_.back().topRows(x.rows()).template cast<double>();
    apply_link(task_, out);
  }

 private:
  BatchResult step(std::span<const double> params, const RowsMap& x, const ConstVectorRef& y,
                   std::span<double> grad_sum) {
    const Eigen::Index n = x.rows();
    // The deltas grow here, not in forward(): evaluating a large set must not size them too.
    if (delta_rows_ < n) {
      for (auto& m : deltas_) m.resize(n, m.cols());
      delta_rows_ = n;
    }
    const std::span<const Scalar> p = compute_params(params);
    forward(p, x);
    const BatchResult result = head(n, y, true);
    // Backpropagation: the output buffer now holds d(loss)/dz of the last layer; each step
    // turns the layer's delta into its gradient and the previous hidden layer's delta.
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const Layer& layer = layers_[l];
      auto dz = delta_of(l).topRows(n);
      const RowsMap in = input_of(l, x);
      auto gw = block(grad_sum, layer.weight_offset, layer.fan_in, layer.fan_out);
      auto gb = block(grad_sum, layer.bias_offset, 1, layer.fan_out);
      if constexpr (kConverts) {
        Matrix& g = weight_grads_[l];
        g.noalias() = in.transpose() * dz;
        gw += g.template cast<double>();
        gb.row(0) += dz.template cast<double>().colwise().sum();
      } else {
        gw.noalias() += in.transpose() * dz;
        gb.row(0) += dz.colwise().sum();
      }
      if (l == 0) break;
      const auto w = weights(p, layer.weight_offset, layer.fan_in, layer.fan_out);
      auto prev = deltas_[l - 1].topRows(n);
      prev.noalias() = dz * w.transpose();
      multiply_by_derivative(prev, activations_[l - 1].topRows(n));
    }
    return result;
  }

  // activations_[l] rows 0..n-1 = the activations of layer l (the raw outputs for the last layer).
  void forward(std::span<const Scalar> p, const RowsMap& x) {
    const Eigen::Index n = x.rows();
    if (activation_rows_ < n) {
      for (auto& m : activations_) m.resize(n, m.cols());
      activation_rows_ = n;
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& layer = layers_[l];
      const auto w = weights(p, layer.weight_offset, layer.fan_in, layer.fan_out);
      const auto b = weights(p, layer.bias_offset, 1, layer.fan_out);
      auto z = activations_[l].topRows(n);
      z.noalias() = input_of(l, x) * w;
      z.rowwise() += b.row(0);
      if (layer.hidden) activate(z);
    }
  }

  // The loss head on the first n outputs, in double (float: through head_, and with `gradient`
  // d(loss)/dz is rounded back into the output buffer for the backward products).
  BatchResult head(Eigen::Index n, const ConstVectorRef& y, bool gradient) {
    auto out = activations_.back().topRows(n);
    if constexpr (kConverts) {
      if (head_.rows() < n) head_.resize(n, head_.cols());
      auto z = head_.topRows(n);
      z = out.template cast<double>();
      const BatchResult result = apply_head(task_, z, y, gradient);
      if (gradient) out = z.template cast<Scalar>();
      return result;
    } else {
      return apply_head(task_, out, y, gradient);
    }
  }

  // The parameters as the products read them: double in place; float converted into params_.
  [[nodiscard]] std::span<const Scalar> compute_params(std::span<const double> params) {
    if constexpr (kConverts) {
      const auto size = static_cast<Eigen::Index>(params.size());
      Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, 1>>(params_.data(), size) =
          Eigen::Map<const Eigen::VectorXd>(params.data(), size).template cast<Scalar>();
      return params_;
    } else {
      return params;
    }
  }
  // The batch's rows as the products read them: double in place; float converted into x_.
  [[nodiscard]] RowsMap inputs(const ConstRowsRef& x) {
    if constexpr (kConverts) {
      grow_inputs(x.rows());
      x_.topRows(x.rows()) = x.template cast<Scalar>();
      return rows_map(x_, x.rows());
    } else {
      return rows_of(x);
    }
  }
  void grow_inputs(Eigen::Index n) {
    if (x_.rows() < n) x_.resize(n, x_.cols());
  }

  [[nodiscard]] static Eigen::Map<const Matrix> weights(std::span<const Scalar> flat,
                                                        std::size_t offset, Eigen::Index rows,
                                                        Eigen::Index cols) noexcept {
    return {flat.data() + offset, rows, cols};
  }
  [[nodiscard]] static RowsMap rows_map(const Matrix& m, Eigen::Index n) noexcept {
    return {m.data(), n, m.cols(), Eigen::OuterStride<>(m.cols())};
  }
  [[nodiscard]] RowsMap input_of(std::size_t l, const RowsMap& x) const {
    return l == 0 ? x : rows_map(activations_[l - 1], x.rows());
  }
  // The last layer's delta is computed in place in its output buffer.
  [[nodiscard]] Matrix& delta_of(std::size_t l) {
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
  std::vector<Matrix> activations_;  // per layer; grow to the largest batch seen, never shrink
  std::vector<Matrix> deltas_;       // per hidden layer: d(loss)/d(pre-activation)
  Eigen::Index activation_rows_ = 0;
  Eigen::Index delta_rows_ = 0;
  // float only (empty for double): the converted parameters, rows and labels of a picked
  // batch, the head's outputs in double, and each layer's weight gradient before it is added.
  std::vector<Scalar> params_;
  Matrix x_;
  Eigen::VectorXd y_;
  RowMatrix head_;
  std::vector<Matrix> weight_grads_;
};

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelSpec& spec) {
  if (spec.config.dtype == config::Dtype::kFloat32) return std::make_unique<Mlp<float>>(spec);
  return std::make_unique<Mlp<double>>(spec);
}

}  // namespace dt::models::detail
