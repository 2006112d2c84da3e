#pragma once
// The hidden-layer activations and their derivatives, shared by the mlp and its tensor-parallel
// slices (tensor_mlp.cpp) so that both compute the same bits. Generic in the scalar: the mlp
// with model.dtype float32 runs them on floats (the constants take the block's scalar type, so
// the double instantiation is the same arithmetic as before).

#include "core/config/config.hpp"

#include <Eigen/Dense>

#include <cmath>
#include <type_traits>

namespace dt::models::detail {

template <class Scalar>
[[nodiscard]] inline Scalar stable_sigmoid(Scalar z) noexcept {
  if (z >= Scalar(0)) return Scalar(1) / (Scalar(1) + std::exp(-z));
  const Scalar e = std::exp(z);
  return e / (Scalar(1) + e);
}

// z = act(z) in place.
template <class Block>
void activate(config::Activation activation, Block&& z) {
  using Scalar = typename std::decay_t<Block>::Scalar;
  switch (activation) {
    case config::Activation::kRelu:
      z = z.cwiseMax(Scalar(0));
      return;
    case config::Activation::kTanh:
      z = z.array().tanh().matrix();
      return;
    case config::Activation::kSigmoid:
      z = z.unaryExpr(&stable_sigmoid<Scalar>);
      return;
  }
}

// delta *= act'(z), written in terms of the activation a = act(z) that the forward pass kept.
template <class Delta, class Activations>
void multiply_by_derivative(config::Activation activation, Delta&& delta, const Activations& a) {
  using Scalar = typename Activations::Scalar;
  switch (activation) {
    case config::Activation::kRelu:
      // a > 0 exactly when z > 0: the derivative at 0 is taken as 0.
      delta.array() *= (a.array() > Scalar(0)).template cast<Scalar>();
      return;
    case config::Activation::kTanh:
      delta.array() *= Scalar(1) - a.array().square();
      return;
    case config::Activation::kSigmoid:
      delta.array() *= a.array() * (Scalar(1) - a.array());
      return;
  }
}

}  // namespace dt::models::detail
