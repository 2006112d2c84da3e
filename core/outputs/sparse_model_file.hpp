#pragma once
// model.json of a sparse model (docs/sparse.md, "model.json of a sparse model"): version 2, no
// "features", "normalization" nor "missing" (sparse rows have no named columns and are never
// normalized); instead a "sparse" object that says how raw input becomes keys, so that predict
// and eval read their data as training did, and the weights block in sparse form
// (sparse_params.hpp). The biases stay dense. Dense models keep version 1, unchanged.
//
//   "sparse": {"format": "libsvm", "width": W, "index_base": 1}
//   "sparse": {"format": "csv", "width": W, "hash_bits": 22, "hashed": ["C1", ...],
//              "crosses": [["C1", "C2"]], "numeric": ["I1", ...], "missing": "error"}
//
// A LIBSVM model's key is index - index_base; a CSV model's keys are hashed_csv.hpp's (the same
// FNV-1a keys of data.hash), its numeric columns the keys 2^hash_bits + i, and "missing" the
// data.missing policy of empty cells.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/models/model.hpp"
#include "core/outputs/run_output.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dt::output {

// The widest sparse model read back: a sparse model takes its width from ModelSpec::inputs, an
// int (sparse_model.hpp), and no run makes a wider one (keys of 2^30 hashed buckets and the
// numeric columns; LIBSVM indices up to 2^31 - 1). Reading such a model allocates only what
// its file lists; predict and eval then keep a key bitmap of width / 4 bytes (compact's index:
// 4 MiB at 2^24, 512 MiB at this limit).
inline constexpr std::uint64_t kMaxSparseWidth = (std::uint64_t{1} << 31) - 1;

// model.json's "sparse" object for a run on sparse rows; `missing` is data.missing.
[[nodiscard]] nlohmann::ordered_json sparse_input_json(const data::SparseSource& sparse,
                                                       config::Missing missing);

// Reads model.json's "sparse" object into model.sparse and model.normalization.missing (the
// empty-cell policy of hashed CSV input). DataError naming `origin`, the field and what to do
// for a missing or mistyped field, an unknown format, a width of 0, past kMaxSparseWidth or
// other than the hashed buckets and numeric columns make, hash_bits outside 1..30 with hashed
// columns, a cross of a column that is not hashed, a name listed twice or that is the label.
void read_sparse_input(const nlohmann::json& j, const std::filesystem::path& origin,
                       const std::string& label, SavedModel& model);

// Reads a sparse model's weights block (`j`, one entry of "parameters", which must be in sparse
// form) into model.weight_index / weight_values.
void read_sparse_weights(const nlohmann::json& j, const models::ParamBlock& block,
                         const std::filesystem::path& origin, SavedModel& model);

// A sparse model's full parameter vector (width x outputs weights, then the biases), as a run
// on its data holds it (model.init).
[[nodiscard]] std::vector<double> dense_params(const SavedModel& model);

// The first way two sparse inputs differ (a model's and a run's data), as a sentence; nullopt
// when they read rows into the same keys.
[[nodiscard]] std::optional<std::string> sparse_difference(const data::SparseSource& model,
                                                           const data::SparseSource& data);

}  // namespace dt::output
