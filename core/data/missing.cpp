// Missing values: the markers, the fill values, and the messages (missing.hpp).

#include "core/data/missing.hpp"
#include "core/data/csv_io.hpp"
#include "base/error.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace dt::data {
namespace {

// pandas.read_csv's default na_values (pandas 2.x) and "?".
constexpr std::array<std::string_view, 19> kMissingMarkers{
    "NA",      "N/A",      "n/a",    "NaN",    "nan",     "-NaN",     "-nan",
    "NULL",    "null",     "None",   "<NA>",   "#N/A",    "#N/A N/A", "#NA",
    "-1.#IND", "-1.#QNAN", "1.#IND", "1.#QNAN", "?"};

}  // namespace

bool is_missing_marker(std::string_view trimmed) noexcept {
  if (trimmed.empty()) return true;
  if (trimmed.size() > 8) return false;
  for (const auto marker : kMissingMarkers) {
    if (trimmed == marker) return true;
  }
  return false;
}

double missing_value(config::Missing policy) noexcept {
  return policy == config::Missing::kZero ? 0.0 : std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> missing_fill(config::Missing policy, const ColumnStats& stats,
                                 const std::vector<std::string>& features) {
  switch (policy) {
    case config::Missing::kError:
      return {};
    case config::Missing::kZero:
      return std::vector<double>(features.size(), 0.0);
    case config::Missing::kMean:
      break;
  }
  std::vector<double> fill(features.size(), 0.0);
  if (stats.count == 0) return fill;  // no training rows: nothing to fill
  if (stats.mean.size() != features.size()) {
    fail<DataError>("column statistics have {} columns but there are {} features",
                    stats.mean.size(), features.size());
  }
  for (std::size_t j = 0; j < features.size(); ++j) {
    const std::uint64_t present = stats.present.empty() ? stats.count : stats.present[j];
    if (present == 0) {
      fail<DataError>("column '{}': every training row's value is missing, so data.missing: mean "
                      "has no mean to fill it with; drop the column (data.exclude: [{}]) or use "
                      "data.missing: zero", features[j], features[j]);
    }
    fill[j] = stats.mean[j];
  }
  return fill;
}

void fill_missing(const std::vector<double>& fill, RowMatrix& x) {
  if (fill.size() != static_cast<std::size_t>(x.cols())) {
    fail<DataError>("missing-value fill for {} columns applied to data with {} columns",
                    fill.size(), x.cols());
  }
  const auto cols = static_cast<std::size_t>(x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    double* row = x.data() + r * x.cols();
    for (std::size_t j = 0; j < cols; ++j) {
      if (std::isnan(row[j])) row[j] = fill[j];
    }
  }
}

void refuse_missing(const std::string& where, const std::string& shown) {
  fail<MissingValueError>("{}: missing value ({}); fill it in the file, or set data.missing: mean "
                          "or zero to fill missing values (docs/configs.md, \"Missing values\")",
                          where, shown);
}

namespace detail {

double parse_feature(std::string_view text, std::uint64_t line, std::uint64_t column,
                     const std::filesystem::path& path, const std::string& name,
                     config::Missing policy) {
  const std::string_view trimmed = trim_spaces(text);
  double value = 0.0;
  if (to_number(trimmed, value) && std::isfinite(value)) return value;
  if (is_missing_marker(trimmed)) {
    if (policy != config::Missing::kError) return missing_value(policy);
    refuse_missing(fmt::format("{}:{}:{}: column '{}'", path.string(), line, column, name),
                   trimmed.empty() ? std::string("an empty cell") : quote_for_message(trimmed));
  }
  return parse_cell(text, line, column, path, name);  // throws: not a number, or infinite
}

double parse_label(std::string_view text, std::uint64_t line, std::uint64_t column,
                   const std::filesystem::path& path, const std::string& name) {
  const std::string_view trimmed = trim_spaces(text);
  double value = 0.0;
  if (to_number(trimmed, value) && std::isfinite(value)) return value;
  if (is_missing_marker(trimmed)) {
    fail<DataError>("{}:{}:{}: label '{}': missing value ({}); a row needs its label (data.missing "
                    "fills feature cells only): drop the row or fill in its label",
                    path.string(), line, column, name,
                    trimmed.empty() ? std::string("an empty cell") : quote_for_message(trimmed));
  }
  return parse_cell(text, line, column, path, name);
}

}  // namespace detail
}  // namespace dt::data
