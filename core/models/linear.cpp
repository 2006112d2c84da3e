// Linear regression: prediction = x·w + b, loss (prediction - y)^2 summed over rows.
// Layout: single_output_layout() (affine.hpp), "weights" [inputs] and "bias" [] (a scalar).

#include "core/models/affine.hpp"

namespace dt::models::detail {

std::unique_ptr<Model> make_linear_regression(const ModelSpec& spec) {
  return std::make_unique<AffineModel>(spec, single_output_layout(spec.inputs));
}

}  // namespace dt::models::detail
