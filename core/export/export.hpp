#pragma once
// A trained model handed to the tools that serve it: ONNX (onnxruntime, and every runtime that
// reads ONNX) and NumPy's .npz. Both are built from model.json as read back (SavedModel), so
// they apply what predict applies: the normalization, the layers, the head.
//
// core/export/: model.json turned into other formats.
// May use: base/, core/config/, core/data/, core/models/, core/outputs/ (the saved model).

#include "core/outputs/run_output.hpp"

#include <string>

namespace dt::exporting {

enum class Precision { kFloat32, kFloat64 };

// The ONNX model (opset 13) as bytes, checked by ONNX's own checker before it is returned.
//   input  "input": [N, features] in model.json's feature order (the raw values: the
//          normalization is the graph's first nodes; with data.missing mean or zero, a NaN
//          input is a missing value, given the model's fill value by an IsNaN and a Where node
//          first)
//   output regression: "prediction" [N, 1]
//          binary:     "label" [N] (the class name, as predict prints it: classes[1] when
//                      the probability is >= 0.5) and "probability" [N, 1] (of classes[1])
//          multiclass: "label" [N] (the most probable class; the first on a tie) and
//                      "probabilities" [N, classes]
// Metadata (metadata_props): "features" and "classes" (JSON lists), "label", "task", "missing"
// (data.missing: error, mean or zero).
// A model with data.categorical columns takes its encoded features as inputs ("color=red" is 1
// or 0, "city#17" the hash bucket's indicator): the encoding is not in the graph; metadata
// "categorical" holds model.json's encodings (JSON) so the caller can encode the same way.
// Float32 (the default of serving stacks) rounds the parameters once; float64 keeps model.json's
// bits. DataError when the model cannot be expressed (no such case today: named if one comes).
[[nodiscard]] std::string to_onnx(const output::SavedModel& model, Precision precision);

// The model as a NumPy .npz (a zip of .npy arrays, stored uncompressed as numpy.savez does):
// every parameter block under its model.json name with its shape (float64), and
// "normalization.shift" / "normalization.scale" (float64, absent without normalization),
// "missing.fill" (float64, each feature's value for a missing cell; absent under data.missing:
// error),
// "features", "classes" (unicode), "model.type", "model.task", "model.activation" (0-d unicode),
// "model.hidden" (int64), and "categorical" (0-d unicode, model.json's encodings as JSON) for a
// model with data.categorical columns, whose inputs are the encoded features. DataError when an array passes the 4 GiB a zip without ZIP64 holds.
[[nodiscard]] std::string to_npz(const output::SavedModel& model);

// Both refuse a sparse model (model.json version 2: DataError saying so and what to use
// instead). Its input is keys that training made from raw rows (LIBSVM indices, hashed CSV
// cells), which neither format describes, and a dense input of its width (2^22 and more) is
// no way to serve it: predict and eval read its rows directly (docs/sparse.md).
void refuse_sparse(const output::SavedModel& model, const char* format);

}  // namespace dt::exporting
