#pragma once
// The hidden-layer activations and their derivatives, shared by the mlp and its tensor-parallel
// slices (tensor_mlp.cpp) so that both compute the same bits.

#include "core/config/config.hpp"

#include <Eigen/Dense>

#include <cmath>

namespace dt::models::detail {

[[nodiscard]] inline double stable_sigmoid(double z) noexcept {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

// z = act(z) in place.
template <class Block>
void activate(config::Activation activation, Block&& z) {
  switch (activation) {
    case config::Activation::kRelu:
      z = z.cwiseMax(0.0);
      return;
    case config::Activation::kTanh:
      z = z.array().tanh().matrix();
      return;
    case config::Activation::kSigmoid:
      z = z.unaryExpr(&stable_sigmoid);
      return;
  }
}

// delta *= act'(z), written in terms of the activation a = act(z) that the forward pass kept.
template <class Delta, class Activations>
void multiply_by_derivative(config::Activation activation, Delta&& delta, const Activations& a) {
  switch (activation) {
    case config::Activation::kRelu:
      // a > 0 exactly when z > 0: the derivative at 0 is taken as 0.
      delta.array() *= (a.array() > 0.0).template cast<double>();
      return;
    case config::Activation::kTanh:
      delta.array() *= 1.0 - a.array().square();
      return;
    case config::Activation::kSigmoid:
      delta.array() *= a.array() * (1.0 - a.array());
      return;
  }
}

}  // namespace dt::models::detail
