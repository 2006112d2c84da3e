// Logistic regression: logit z = x·w + b, P(y = 1) = sigmoid(z), loss the binary cross-entropy
// computed from z (softplus(z) - y z), which stays finite for any logit.
// Layout: "weights" [inputs] and "bias" [] (a scalar), as for linear regression.

#include "core/models/affine.hpp"

namespace dt::models::detail {

std::unique_ptr<Model> make_logistic_regression(const ModelSpec& spec) {
  return std::make_unique<AffineModel>(spec, single_output_layout(spec.inputs));
}

}  // namespace dt::models::detail
