// Linear regression: prediction = x·w + b, loss (prediction - y)^2 summed over rows.
// Layout: "weights" [inputs] and "bias" [] (a scalar), the shapes of numpy's and sklearn's
// coef_ / intercept_ for one target.

#include "core/models/affine.hpp"

namespace dt::models::detail {

std::unique_ptr<Model> make_linear_regression(const ModelSpec& spec) {
  const auto p = static_cast<std::size_t>(spec.inputs);
  std::vector<ParamBlock> layout{
      {"weights", {spec.inputs}, 0, p, true},
      {"bias", {}, p, 1, false},
  };
  return std::make_unique<AffineModel>(spec, std::move(layout));
}

}  // namespace dt::models::detail
