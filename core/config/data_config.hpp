#pragma once
// The data section of the run configuration (config.hpp): the source, its format and columns,
// and how its cells are read.

#include "core/config/names.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dt::config {

struct SyntheticConfig {
  SyntheticKind kind = SyntheticKind::kLinear;
  std::int64_t rows = 10000;
  int features = 10;
  int classes = 3;  // blobs only
  double noise = 0.1;
};

// data.categorical: a text column encoded as numbers (core/data/categorical.hpp).
struct CategoricalColumn {
  std::string column;
  std::uint64_t buckets = 0;  // 0: one_hot; else hash into this many buckets
};

// data.hash: categorical CSV columns (and pairs of them) hashed into 2^bits keys of sparse rows
// (core/data/hashed_csv.hpp).
struct HashConfig {
  int bits = 0;                      // 1..30
  std::vector<std::string> columns;  // hashed columns, in the order the config lists them
  std::vector<std::pair<std::string, std::string>> crosses;  // [a, b]: a key from both values
};

// data.sparse: whether rows are kept sparse (CSR, core/data/sparse_rows.hpp) in memory.
enum class SparseChoice { kAuto, kOn, kOff };

struct DataConfig {
  std::filesystem::path path;            // resolved against the config file's folder; empty with synthetic
  std::optional<std::string> label;      // default: the last column
  // data.features / data.exclude: column names or ranges "a:b" (see data::select_features);
  // empty: every column but the label / none.
  std::vector<std::string> features;
  std::vector<std::string> exclude;
  std::vector<CategoricalColumn> categorical;  // in the order the config lists them
  Normalize normalize = Normalize::kStandard;
  // data.missing: what an empty cell or a missing marker (NA, NaN, ...; data::is_missing_marker)
  // becomes: an error, the column's mean over all training shards, or 0.
  Missing missing = Missing::kError;
  // data.delimiter: 0 detects it from the header (auto); else ',', '\t', ';' or '|'.
  char delimiter = 0;
  // data.compression: auto (the file's name, .gz or .zst, checked against its first bytes).
  Compression compression = Compression::kAuto;
  // data.format: auto (the name: .npy, .npz, else CSV; checked against the first bytes). The
  // CLI resolves auto before a run starts; an .npz is unpacked into .npy files there.
  DataFormat format = DataFormat::kAuto;
  std::filesystem::path labels;          // data.labels: a 1-D .npy of labels; empty: a column
  std::string array_x = "x";             // data.arrays.x: the features' array in an .npz
  std::string array_y = "y";             // data.arrays.y: the labels' array in an .npz
  // LIBSVM data.path (core/data/libsvm.hpp): data.index_base (-1 auto, 0 or 1), data.feature_count
  // (0: the largest index in the file) and data.max_dense_gib (the dense matrix's size limit).
  int index_base = -1;
  std::int64_t feature_count = 0;
  double max_dense_gib = 8.0;
  // data.sparse and data.hash (sections_sparse.cpp): auto keeps rows sparse with data.hash, and
  // for a LIBSVM file whose dense matrix would pass data.max_dense_gib.
  SparseChoice sparse = SparseChoice::kAuto;
  std::optional<HashConfig> hash;
  double validation_fraction = 0.0;      // 0 = no validation split
  std::optional<SyntheticConfig> synthetic;
};

}  // namespace dt::config
