// Softmax (multinomial logistic) regression: K logits x·W + b, cross-entropy with the
// log-sum-exp shift. Layout: "weights" [inputs, K] (row-major, so W[i, k] is at i*K + k) and
// "bias" [K].

#include "core/models/affine.hpp"

namespace dt::models::detail {

std::unique_ptr<Model> make_softmax_regression(const ModelSpec& spec) {
  const auto p = static_cast<std::size_t>(spec.inputs);
  const auto k = static_cast<std::size_t>(spec.classes);
  std::vector<ParamBlock> layout{
      {"weights", {spec.inputs, spec.classes}, 0, p * k, true},
      {"bias", {spec.classes}, p * k, k, false},
  };
  return std::make_unique<AffineModel>(spec, std::move(layout));
}

}  // namespace dt::models::detail
