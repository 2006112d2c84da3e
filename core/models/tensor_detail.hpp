#pragma once
// Internals of tensor.cpp: one slice factory per model family. `full` is the unsplit model
// (already validated), whose layout the slices map into.

#include "core/models/tensor.hpp"

#include <memory>

namespace dt::models::detail {

[[nodiscard]] std::unique_ptr<TensorSlice> make_affine_slice(const Model& full, int tensor,
                                                             int rank);
[[nodiscard]] std::unique_ptr<TensorSlice> make_mlp_slice(const Model& full, int tensor, int rank);

}  // namespace dt::models::detail
