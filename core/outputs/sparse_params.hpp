#pragma once
// A parameter block of model.json in sparse form: its nonzero values only, each with its index,
// for sparse models of millions of features (docs/sparse.md). model.json of a sparse model
// (sparse_model_file.hpp) writes its weights so; parse_model reads the form in any block.
//
//   {"name": "weights", "shape": [W, K], "encoding": "sparse",
//    "index": [i0, i1, ...], "data": [v0, v1, ...]}
//
// "index": positions within the block, row-major (key k's output c at k * K + c; a block of one
// dimension: the key), strictly ascending; "data": the values there, finite. Every other value
// of the block is 0. The dense form ("data" with every value, no "encoding") stays as it is.

#include "core/models/model.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <cstdint>
#include <span>
#include <vector>

namespace dt::output {

// The block `block` of `params` (the full vector) in sparse form: its nonzero values, in order.
[[nodiscard]] nlohmann::ordered_json sparse_block_json(const models::ParamBlock& block,
                                                       std::span<const double> params);

// True when j (one entry of "parameters") says "encoding": "sparse".
[[nodiscard]] bool is_sparse_block(const nlohmann::json& j);

// A sparse block's entries as listed: ascending positions in the block and their values.
struct SparseEntries {
  std::vector<std::uint64_t> index;
  std::vector<double> data;
};

// Reads a sparse block's entries, with read_sparse_block's checks (below), allocating what the
// file lists and nothing of the block's size (a sparse model's weights: model.json's text
// bounds their number, not the width).
[[nodiscard]] SparseEntries read_sparse_entries(const nlohmann::json& j,
                                                const models::ParamBlock& block,
                                                const std::filesystem::path& origin);

// Reads a sparse block's values into `out` (block.size values: zeros, then the listed ones).
// The name and shape are the caller's to check, as for a dense block. DataError naming `origin`
// and the block for a missing or mistyped field, an index out of the block or not above the one
// before, index and data of different lengths, a value that is not finite.
void read_sparse_block(const nlohmann::json& j, const models::ParamBlock& block,
                       std::span<double> out, const std::filesystem::path& origin);

}  // namespace dt::output
