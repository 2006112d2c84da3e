// Logistic regression: logit z = x·w + b, P(y = 1) = sigmoid(z), loss the binary cross-entropy
// computed from z (softplus(z) - y z), which stays finite for any logit.
// Layout: "weights" [inputs] and "bias" [] (a scalar), as for linear regression.

#include "core/models/affine.hpp"

namespace dt::models::detail {

std::unique_ptr<Model> make_logistic_regression(const ModelSpec& spec) {
  const auto p = static_cast<std::size_t>(spec.inputs);
  std::vector<ParamBlock> layout{
      {"weights", {spec.inputs}, 0, p, true},
      {"bias", {}, p, 1, false},
  };
  return std::make_unique<AffineModel>(spec, std::move(layout));
}

}  // namespace dt::models::detail
