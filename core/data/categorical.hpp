#pragma once
// data.categorical: text columns (or numbers read as text) encoded as numeric features, one
// 0/1 feature per category (one_hot) or per hash bucket (hash). The coordinator finds each
// one_hot column's categories over all rows of the file when it describes the source; the
// encodings travel to the workers with the source and into model.json, so predict and eval
// encode a file as training did.

#include "core/config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace dt::data {

struct SourceInfo;
struct CellScan;
struct Normalization;

// More distinct values than this in a one_hot column is refused (suggesting hash), as for classes.
inline constexpr std::size_t kMaxCategories = 1000;
// The largest hash bucket count data.categorical accepts.
inline constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 20;

// How one source column becomes features: one_hot (buckets 0) has `categories`, sorted
// bytewise and distinct; hash has `buckets` > 0 and no categories.
struct Encoding {
  std::string column;
  std::vector<std::string> categories;
  std::uint64_t buckets = 0;

  [[nodiscard]] bool hashed() const noexcept { return buckets != 0; }
  // How many features the column becomes.
  [[nodiscard]] std::size_t width() const noexcept {
    return hashed() ? static_cast<std::size_t>(buckets) : categories.size();
  }
  // Feature i's name: "color=red" (one_hot), "city#17" (hash bucket 17).
  [[nodiscard]] std::string feature_name(std::size_t i) const;
};

// After select_features: checks data.categorical against the columns (known, not the label,
// among the features), finds the one_hot categories over every data row of the indexed CSV
// (held-out rows too, like classes), and replaces each categorical column in info.features by
// its encoded features, in place. DataError naming the file, line and column for an empty or
// non-UTF-8 cell, and the column with a hint for more than kMaxCategories values.
// `cells`: the categories index_csv gathered (csv_cells.hpp), used when complete.
void resolve_categorical(const config::DataConfig& data, SourceInfo& info,
                         const std::string& origin, const CellScan* cells = nullptr);

// The names of all encoded features.
[[nodiscard]] std::unordered_set<std::string> encoded_features(
    const std::vector<Encoding>& encodings);

// Encoded features keep shift 0 and scale 1 (a 0/1 indicator is already on a unit scale and
// stays exactly 0 or 1), and are not reported as constant columns.
void leave_encoded_unscaled(Normalization& norm, const std::vector<std::string>& features,
                            const std::vector<Encoding>& encodings);

// What is wrong with encodings read from a message or model.json (an empty or repeated column,
// unsorted or repeated categories, too many of them, a bucket count out of range, an encoded
// feature missing from `features` when that is not empty), or nullopt.
[[nodiscard]] std::optional<std::string> encoding_problem(
    const std::vector<Encoding>& encodings, const std::vector<std::string>& features);

}  // namespace dt::data
