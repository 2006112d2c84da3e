#pragma once
// Data sources (a CSV file or a seeded synthetic generator), the validation split, shard plans,
// loading one shard, normalization statistics merged across shards, and label handling.
//
// core/data/: reading data (CSV, synthetic), shard plans, non-IID splits, normalization
// statistics, labels.
// May use: base/, core/config/.

#include "core/config/config.hpp"
#include "core/data/categorical.hpp"
#include "core/data/csv.hpp"
#include "core/data/sparse_rows.hpp"

#include <Eigen/Dense>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dt::data {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A run of consecutive source rows. For a CSV the byte offset and line of `first_row` let a
// worker seek to it; for synthetic data they are 0.
struct Segment {
  std::uint64_t first_row = 0;
  std::uint64_t count = 0;
  std::uint64_t byte_offset = 0;
  std::uint64_t line = 0;
};

// SourceInfo::label_index for a table read without labels (predict).
inline constexpr std::size_t kNoLabel = static_cast<std::size_t>(-1);

// Sparse data (data.sparse, data.hash): how a row becomes keys < width (sparse_rows.hpp).
// LIBSVM: key = index - index_base. CSV: each `hashed` column's value, and each cross of two
// columns, hashed into keys 0 .. 2^hash_bits - 1 (hashed_csv.hpp); then the `numeric` columns
// as keys 2^hash_bits + i (no hashed columns: hash_bits 0, keys 0 .. numeric - 1).
struct SparseSource {
  std::uint64_t width = 0;
  std::uint64_t index_base = 0;
  int hash_bits = 0;
  std::vector<std::string> hashed;
  std::vector<std::pair<std::string, std::string>> crosses;
  std::vector<std::string> numeric;
};

// What the coordinator knows about the source before any worker loads it.
struct SourceInfo {
  std::vector<std::string> columns;   // all columns, in file order
  std::vector<std::string> features;  // the feature columns, in file order
  std::string label;
  std::size_t label_index = 0;        // into `columns`
  std::uint64_t rows = 0;
  char delimiter = ',';               // the CSV's field separator (workers read with it)
  std::optional<CsvIndex> csv;        // empty for synthetic data
  // Strategy files: this worker's own CSV (workers get no index, so load_shard needs the path).
  // Empty otherwise: the source is data.path or data.synthetic.
  std::filesystem::path file;
  // data.categorical: how each categorical column becomes features (their names are in
  // `features`, in place of the column's); empty without it.
  std::vector<Encoding> categorical;
  // Sparse data: `features` is then empty (the dense statistics and normalization see no
  // column) and the rows are loaded into Shard::sparse.
  std::optional<SparseSource> sparse;
};

// The model's input width: the sparse width, or the number of feature columns.
[[nodiscard]] inline std::uint64_t input_width(const SourceInfo& source) noexcept {
  return source.sparse ? source.sparse->width : source.features.size();
}

// A worker's own copy of the data (`disttrain worker --data FILE`) instead of the path the
// coordinator sent: DataError unless FILE has the same columns and data row count; then
// `source` and `segments` read FILE, its rows found by number in FILE's own index. An .npy FILE
// (told by name and content) stands for the coordinator's array: the same shape, its labels a
// column (DataError with data.labels, a file the copy does not bring).
void use_local_copy(const std::filesystem::path& file, const config::DataConfig& data,
                    SourceInfo& source, std::vector<Segment>& segments);

// Indexes the CSV (or describes the synthetic source) and resolves the label column.
// DataError when the label column is missing: "data.csv: no column 'target'; columns are: a, b, y
// (did you mean 'targets'?)". index_threads: how many threads index_csv may use. `indexed`: the
// CSV's index, already made (validate indexes a compressed file as it decompresses it, with no
// file to index: StreamIndexer); its path stands for data.path in messages.
[[nodiscard]] SourceInfo describe_source(const config::Config& config, unsigned index_threads = 1,
                                         const CsvIndex* indexed = nullptr);

// "a, b, c" for messages, shortened for files with hundreds of columns.
[[nodiscard]] std::string column_list(const std::vector<std::string>& columns);

// The feature columns, in file order: those data.features lists (all when empty), less those
// data.exclude lists, never the label. An entry is a column name, or a range "first:last" of
// two names or two 1-based column numbers (inclusive; a range may span the label, which is
// skipped). DataError for an unknown name (with a suggestion), the label named alone, or no
// features left; `origin` starts the message (the file's path).
[[nodiscard]] std::vector<std::string> select_features(const std::vector<std::string>& columns,
                                                       std::size_t label_index,
                                                       const std::vector<std::string>& features,
                                                       const std::vector<std::string>& exclude,
                                                       const std::string& origin);

// Row indices (in source order, sorted) held out for validation: round(fraction * rows) rows
// drawn without replacement from the seed. Every process computes the same set.
[[nodiscard]] std::vector<std::uint64_t> validation_rows(std::uint64_t rows, double fraction,
                                                         std::uint64_t seed);

// The training rows of each worker: contiguous ranges, round robin, or a seeded random
// partition, over the rows not held out. Shard sizes differ by at most one row.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> plan_shards(
    std::uint64_t rows, const std::vector<std::uint64_t>& held_out, int count,
    config::ShardStrategy strategy, std::uint64_t seed);

// Sorted row indices -> segments of consecutive rows (with byte offsets from the index, if any).
[[nodiscard]] std::vector<Segment> to_segments(const std::vector<std::uint64_t>& rows,
                                               const std::optional<CsvIndex>& csv);

// The contiguous plan (ShardStrategy::kContiguous) as each shard's segments, made without a
// list of rows: the same segments as to_segments over plan_shards' shards, in memory that grows
// with the held-out rows and the segments, not with the rows.
[[nodiscard]] std::vector<std::vector<Segment>> contiguous_segments(
    std::uint64_t rows, const std::vector<std::uint64_t>& held_out, int count,
    const std::optional<CsvIndex>& csv);

// `segments` in consecutive pieces of at most `max_rows` rows, for reading a shard a piece at a
// time in bounded memory. A segment is cut inside only where a piece's start can be found: in a
// CSV with its index (`csv`), or where a row is found by its number alone (`by_number`:
// rows_by_number); otherwise it stays whole.
[[nodiscard]] std::vector<std::vector<Segment>> chunk_segments(
    const std::vector<Segment>& segments, std::uint64_t max_rows,
    const std::optional<CsvIndex>& csv, bool by_number);
// Whether load_shard finds any row of `source` by its number alone, with no index: synthetic
// rows (generated from the row number) and NumPy arrays (at a fixed byte offset).
[[nodiscard]] bool rows_by_number(const config::Config& config, const SourceInfo& source);

// How labels are read for a model's task.
enum class LabelKind {
  kNumeric,      // regression: any finite number
  kBinary,       // logistic / mlp binary: 0 or 1
  kCategorical,  // softmax / mlp multiclass: class indices 0..K-1, or class names
};
[[nodiscard]] LabelKind label_kind(config::Task task);

// Per-column statistics that merge exactly across shards (Chan et al.'s parallel variance).
// A NaN cell (a missing value under data.missing: mean) is left out of its column's statistics:
// `present` then counts each column's values; empty means every column has `count`.
struct ColumnStats {
  std::uint64_t count = 0;
  std::vector<double> mean, m2, min, max;
  std::vector<std::uint64_t> present;
};

// One shard in memory. Rows are in segment order.
struct Shard {
  RowMatrix x;                        // rows x features, raw (not yet normalized); 0 columns when sparse
  std::optional<SparseRows> sparse;   // sparse data (SourceInfo::sparse): the rows, never normalized
  Eigen::VectorXd y;                  // numeric/binary labels; class index once classes are known
  std::vector<std::string> raw_labels;  // categorical only: the label text of every row
  // The first pass of column_stats (sums in `mean`, min, max; rows in order), made by a loader
  // while the rows were in cache (a float64 or float32 .npy); none when the loader made none.
  std::optional<ColumnStats> sums;
};

// Loads the rows of `segments`: CSV rows parsed with file:line:column errors (non-numeric or
// non-finite cells, labels that do not fit `kind`), or synthetic rows generated.
[[nodiscard]] Shard load_shard(const config::Config& config, const SourceInfo& source,
                               const std::vector<Segment>& segments, LabelKind kind);
// load_shard that keeps the labels (y, raw_labels; sparse rows too) but no row of x (0 rows):
// every cell read and checked as load_shard does, with the same errors, for `validate`. A
// float64 .npy is checked where it lies in the page cache and CSV rows are parsed into one row
// that stays in the cache: no matrix of fresh memory, no copy.
[[nodiscard]] Shard check_shard(const config::Config& config, const SourceInfo& source,
                                const std::vector<Segment>& segments, LabelKind kind);

[[nodiscard]] ColumnStats column_stats(const RowMatrix& x);
// column_stats(shard.x), with the loader's first pass (Shard::sums) when it made one: the same
// bits, one pass over the rows fewer.
[[nodiscard]] ColumnStats column_stats(const Shard& shard);
// Merging in a fixed order (rank 0, 1, ...) gives the same bits on every run.
void merge_into(ColumnStats& into, const ColumnStats& other);

// x' = (x - shift) / scale per feature. Zero-variance (or zero-range) columns keep shift 0 and
// scale 1 and are listed in `constant_columns` so the caller can warn. Before that, a NaN cell
// (a missing value) becomes fill[j] (data.missing: mean or zero; missing.hpp); `fill` is empty
// under data.missing: error, where no NaN is ever loaded.
struct Normalization {
  config::Normalize kind = config::Normalize::kNone;
  std::vector<double> shift, scale;
  std::vector<std::string> constant_columns;
  config::Missing missing = config::Missing::kError;
  std::vector<double> fill;
};
[[nodiscard]] Normalization make_normalization(config::Normalize kind, const ColumnStats& stats,
                                               const std::vector<std::string>& features);
void apply(const Normalization& norm, RowMatrix& x);

// Labels: the distinct raw labels of a shard, and the global class list from all of them.
// If every label is a non-negative integer the classes are "0".."K-1" (K = largest + 1);
// otherwise the labels are class names, sorted. DataError when there are more than 1000 classes
// or fewer than 2.
[[nodiscard]] std::vector<std::string> distinct_labels(const Shard& shard);
[[nodiscard]] std::vector<std::string> resolve_classes(const std::vector<std::string>& labels);
// Fills shard.y with class indices (DataError for a label that is not a class).
void assign_classes(Shard& shard, const std::vector<std::string>& classes);

// Synthetic data: row i is a pure function of (seed, i), so any worker generates only its rows.
// Columns x0..x{P-1} then y. linear: y = x.w + b + noise*e; logistic: y = [x.w + b + noise*e > 0];
// blobs: class c = hash(row) mod K, x = center_c + noise*e with centers spread by the seed.
void synthesize(const config::SyntheticConfig& spec, std::uint64_t seed, std::uint64_t first_row,
                std::uint64_t count, Eigen::Ref<RowMatrix> x, Eigen::Ref<Eigen::VectorXd> y);
[[nodiscard]] std::vector<std::string> synthetic_columns(const config::SyntheticConfig& spec);

}  // namespace dt::data
