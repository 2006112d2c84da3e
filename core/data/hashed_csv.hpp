#pragma once
// Sparse rows from a CSV (data.hash, data.sparse: true): categorical columns hashed into keys,
// crosses of two columns, numeric columns after them. The key of a value is fixed and
// documented (docs/sparse-data.md) so that predict and other tools reproduce it:
//   key("column", "value") = fnv1a64("column=value") >> (64 - bits)
//   cross key            = fnv1a64("a=x" "\x1F" "b=y") >> (64 - bits)
// (base/hash.hpp's FNV-1a over the UTF-8 bytes as read from the cells; the top bits, which
// FNV-1a mixes best, not the low ones, whose bit k depends only on the inputs' low bits).

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dt::data {

// The unit separator between the two halves of a cross.
inline constexpr char kCrossSeparator = '\x1F';

[[nodiscard]] std::uint32_t hashed_key(std::string_view column, std::string_view value, int bits) noexcept;
[[nodiscard]] std::uint32_t crossed_key(std::string_view a, std::string_view x, std::string_view b,
                                        std::string_view y, int bits) noexcept;

// The sparse layout of a CSV source (SourceInfo::sparse), from data.hash and the selected
// features in `info` (cleared: a sparse source has no dense feature). DataError, naming
// `origin`, for a hashed or crossed column that is not in the file or is the label, a cross of
// columns that data.hash.columns does not list, or more keys than 32 bits hold.
void make_sparse_csv(const config::DataConfig& data, SourceInfo& info, const std::string& origin);

namespace detail {
class RecordReader;
}

// Loads the rows of `segments` of a sparse CSV source into shard.sparse (shard.y as a dense
// load fills it). `index` is null in a worker (segments carry the byte offsets). Errors name
// file:line:column. Plain rows go through a fast path (hashed_rows.hpp), the others through the
// general record parser, with the same result; `fast_path` false sends every row the general
// way (the tests compare the two). Returns how many rows the fast path took. `stream`: a
// reader of the whole data front to back (CsvStream: predict and eval), read on from where it
// is; its end ends the load (shard.sparse->rows() says how many rows were read).
std::uint64_t load_sparse_csv(const std::filesystem::path& path, const CsvIndex* index,
                              const SourceInfo& source, const std::vector<Segment>& segments,
                              Shard& shard, LabelKind kind, config::Missing missing,
                              bool fast_path = true, detail::RecordReader* stream = nullptr);

// load_shard for a sparse source: LIBSVM or CSV rows into shard.sparse, shard.x with 0 columns.
[[nodiscard]] Shard load_sparse_shard(const config::Config& config, const SourceInfo& source,
                                      const std::vector<Segment>& segments, LabelKind kind);

}  // namespace dt::data
