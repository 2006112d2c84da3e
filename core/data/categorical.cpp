// data.categorical: the category lists, the encoded feature names, and encoding a row's cells.

#include "core/data/categorical.hpp"
#include "core/data/categorical_cells.hpp"
#include "core/data/csv_cells.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

namespace dt::data {
namespace {

std::size_t position_of(const std::vector<std::string>& names, std::string_view name) {
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

// The coordinator's scan and the workers' rows report an empty categorical cell alike.
[[noreturn]] void empty_cell(const std::string& path, std::uint64_t line, std::uint64_t column,
                             const std::string& name) {
  fail<DataError>("{}:{}:{}: column '{}': empty cell; a data.categorical column needs a value "
                  "in every row, or data.missing: zero (or mean) to encode an empty one as all "
                  "zeros",
                  path, line, column, name);
}

// The config's columns, checked, as encodings without categories, in file order.
std::vector<Encoding> configured(const config::DataConfig& data, const SourceInfo& info,
                                 const std::string& origin) {
  std::vector<Encoding> out;
  for (const auto& c : data.categorical) {
    const auto at = position_of(info.columns, c.column);
    if (at == info.columns.size()) {
      fail<DataError>("{}: data.categorical: no column '{}'{}; columns are: {}", origin, c.column,
                      text::suggestion_suffix(c.column, info.columns), column_list(info.columns));
    }
    if (at == info.label_index) {
      fail<DataError>("{}: data.categorical: '{}' is the label column; a classifier reads text "
                      "labels as class names without it (remove it from data.categorical)",
                      origin, c.column);
    }
    if (position_of(info.features, c.column) == info.features.size()) {
      fail<DataError>("{}: data.categorical: column '{}' is not a feature (data.features or "
                      "data.exclude leave it out); remove it from data.categorical or from "
                      "data.exclude",
                      origin, c.column);
    }
    const bool repeated = std::any_of(out.begin(), out.end(),
                                      [&](const Encoding& e) { return e.column == c.column; });
    if (repeated) fail<DataError>("{}: data.categorical: column '{}' is listed twice", origin, c.column);
    out.push_back({c.column, {}, c.buckets});
  }
  std::sort(out.begin(), out.end(), [&](const Encoding& a, const Encoding& b) {
    return position_of(info.columns, a.column) < position_of(info.columns, b.column);
  });
  return out;
}

// Every one_hot column's distinct values over the data rows of the indexed CSV. An empty cell
// is refused unless `empty_allowed` (data.missing is not error: it encodes as all zeros).
void find_categories(const SourceInfo& info, std::vector<Encoding>& encodings,
                     bool empty_allowed, const CellScan* gathered) {
  std::vector<std::pair<std::size_t, Encoding*>> wanted;  // source column, encoding
  for (auto& e : encodings) {
    if (!e.hashed()) wanted.emplace_back(position_of(info.columns, e.column), &e);
  }
  if (wanted.empty() || !info.csv || info.csv->rows() == 0) return;
  const CellScan* g = gathered;
  if (g != nullptr && g->complete(info.csv->rows()) && g->names.size() == wanted.size()) {
    for (auto& [at, encoding] : wanted) {  // gathered by the index pass, for these columns
      const auto& values = g->seen.at(static_cast<std::size_t>(
          std::find(g->names.begin(), g->names.end(), encoding->column) - g->names.begin()));
      encoding->categories.assign(values.begin(), values.end());
    }
    return;
  }
  const CsvIndex& index = *info.csv;
  const std::string name = index.path.string();
  std::vector<std::set<std::string, std::less<>>> seen(wanted.size());
  const auto note = [&](std::size_t k, std::string_view value, std::uint64_t line,
                        std::uint64_t column) {
    const Encoding& encoding = *wanted[k].second;
    if (value.empty()) {
      if (empty_allowed) return;
      empty_cell(name, line, column, encoding.column);
    }
    if (seen[k].find(value) != seen[k].end()) return;
    if (!text::valid_utf8(value)) {
      fail<DataError>("{}:{}:{}: column '{}': the value is not valid UTF-8; save the file as "
                      "UTF-8",
                      name, line, column, encoding.column);
    }
    seen[k].emplace(value);
    if (seen[k].size() > kMaxCategories) {
      fail<DataError>("{}:{}:{}: column '{}' has more than {} distinct values, too many for "
                      "one_hot (one feature each); hash them into buckets instead: "
                      "data.categorical: {{{}: {{hash: 256}}}}",
                      name, line, column, encoding.column, kMaxCategories, encoding.column);
    }
  };
  std::size_t last = 0;  // the rightmost wanted column: a line is split up to it, no further
  for (const auto& w : wanted) last = std::max(last, w.first);
  // Views into the reader's buffer: a value is copied only the first time it is seen. A line
  // without quotes is split at its separators up to the last wanted cell (the usual line: the
  // scan costs a memchr per cell, not a parse of the record); any other goes to the record
  // parser.
  constexpr std::size_t kLookahead = std::size_t{16} << 10;
  detail::RecordReader reader(index.path, index.row_offset.front(), index.row_line.front(),
                              index.delimiter);
  std::vector<detail::FieldView> fields;
  std::vector<std::string_view> cells(last + 1);
  for (std::uint64_t row = 0; row < index.rows(); ++row) {
    const std::string_view window = reader.peek(kLookahead);
    const std::size_t eol = window.find('\n');
    std::string_view rest = window.substr(0, eol);
    bool plain = eol != std::string_view::npos && !rest.empty() &&
                 rest.find('"') == std::string_view::npos;
    if (plain && rest.back() == '\r') rest.remove_suffix(1);
    const char* const line_start = rest.data();
    for (std::size_t c = 0; plain && c <= last; ++c) {
      const std::size_t cut = rest.find(index.delimiter);
      if (cut == std::string_view::npos && c < last) plain = false;
      cells[c] = rest.substr(0, cut);
      if (cut != std::string_view::npos) rest.remove_prefix(cut + 1);
    }
    if (plain) {
      for (std::size_t k = 0; k < wanted.size(); ++k) {
        const std::string_view cell = cells[wanted[k].first];
        note(k, detail::trim_spaces(cell), reader.line(),
             static_cast<std::uint64_t>(cell.data() - line_start) + 1);
      }
      reader.consume_line(eol + 1);
      continue;
    }
    if (!reader.next_views(fields)) break;
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      const std::size_t c = wanted[k].first;
      if (c >= fields.size()) continue;  // the index already refused ragged rows
      const detail::FieldView& cell = fields[c];
      note(k, detail::trim_spaces(cell.text()), cell.line, cell.column);
    }
  }
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    wanted[k].second->categories.assign(seen[k].begin(), seen[k].end());  // std::set: sorted
  }
}

}  // namespace

std::string Encoding::feature_name(std::size_t i) const {
  return hashed() ? fmt::format("{}#{}", column, i) : fmt::format("{}={}", column, categories.at(i));
}

void resolve_categorical(const config::DataConfig& data, SourceInfo& info,
                         const std::string& origin, const CellScan* cells) {
  if (data.categorical.empty()) return;
  if (!info.csv) {
    fail<DataError>("{}: data.categorical applies to CSV data (and stdin, .gz, .zst, which are "
                    "read as CSV); remove it",
                    origin);
  }
  auto encodings = configured(data, info, origin);
  find_categories(info, encodings, data.missing != config::Missing::kError, cells);
  std::vector<std::string> features;
  for (const auto& f : info.features) {
    const auto it = std::find_if(encodings.begin(), encodings.end(),
                                 [&](const Encoding& e) { return e.column == f; });
    if (it == encodings.end()) {
      features.push_back(f);
      continue;
    }
    for (std::size_t i = 0; i < it->width(); ++i) features.push_back(it->feature_name(i));
  }
  std::set<std::string_view> names;
  for (const auto& f : features) {
    if (!names.insert(f).second) {
      fail<DataError>("{}: data.categorical: the encoded feature '{}' has the name of another "
                      "feature; rename that column or exclude it",
                      origin, f);
    }
  }
  info.features = std::move(features);
  info.categorical = std::move(encodings);
}

std::unordered_set<std::string> encoded_features(const std::vector<Encoding>& encodings) {
  std::unordered_set<std::string> out;
  for (const auto& e : encodings) {
    for (std::size_t i = 0; i < e.width(); ++i) out.insert(e.feature_name(i));
  }
  return out;
}

void leave_encoded_unscaled(Normalization& norm, const std::vector<std::string>& features,
                            const std::vector<Encoding>& encodings) {
  if (encodings.empty()) return;
  const auto encoded = encoded_features(encodings);
  for (std::size_t j = 0; j < features.size() && j < norm.shift.size(); ++j) {
    if (!encoded.contains(features[j])) continue;
    norm.shift[j] = 0.0;
    norm.scale[j] = 1.0;
  }
  std::erase_if(norm.constant_columns, [&](const std::string& c) { return encoded.contains(c); });
}

std::optional<std::string> encoding_problem(const std::vector<Encoding>& encodings,
                                            const std::vector<std::string>& features) {
  const std::unordered_set<std::string_view> known(features.begin(), features.end());
  std::set<std::string_view> columns;
  for (const auto& e : encodings) {
    if (e.column.empty() || !columns.insert(e.column).second) {
      return fmt::format("categorical column '{}' is empty or repeated", e.column);
    }
    if (e.hashed()) {
      if (!e.categories.empty() || e.buckets < 2 || e.buckets > kMaxBuckets) {
        return fmt::format("categorical column '{}' needs 2 to {} buckets and no categories",
                           e.column, kMaxBuckets);
      }
    } else {
      if (e.categories.empty() || e.categories.size() > kMaxCategories) {
        return fmt::format("categorical column '{}' needs 1 to {} categories", e.column,
                           kMaxCategories);
      }
      for (std::size_t i = 0; i < e.categories.size(); ++i) {
        if (e.categories[i].empty() || (i > 0 && !(e.categories[i - 1] < e.categories[i]))) {
          return fmt::format("the categories of column '{}' are not distinct, non-empty and "
                             "sorted",
                             e.column);
        }
      }
    }
    for (std::size_t i = 0; i < e.width() && !features.empty(); ++i) {
      if (!known.contains(e.feature_name(i))) {
        return fmt::format("the encoded feature '{}' of categorical column '{}' is not among "
                           "the features",
                           e.feature_name(i), e.column);
      }
    }
  }
  return std::nullopt;
}

namespace detail {

CategoricalCells::CategoricalCells(const SourceInfo& source, bool empty_is_zero)
    : empty_is_zero_(empty_is_zero) {
  std::unordered_map<std::string, std::size_t> feature_of;
  for (std::size_t f = 0; f < source.features.size(); ++f) feature_of.emplace(source.features[f], f);
  columns_.reserve(source.categorical.size());
  for (const auto& e : source.categorical) {
    Column col;
    col.source_index = position_of(source.columns, e.column);
    col.encoding = &e;
    bool used = false;
    for (std::size_t i = 0; i < e.width(); ++i) {
      const auto it = feature_of.find(e.feature_name(i));
      col.slot.push_back(it == feature_of.end() ? -1 : static_cast<std::ptrdiff_t>(it->second));
      used = used || it != feature_of.end();
    }
    if (!used) continue;  // a tensor rank without this column's features
    if (col.source_index >= source.columns.size()) {
      fail<DataError>("no column '{}' for the categorical features; columns are: {}", e.column,
                      column_list(source.columns));
    }
    for (std::size_t i = 0; i < e.categories.size(); ++i) col.lookup.emplace(e.categories[i], i);
    columns_.push_back(std::move(col));
  }
  std::sort(columns_.begin(), columns_.end(), [](const Column& a, const Column& b) {
    return a.source_index < b.source_index;
  });
}

void CategoricalCells::encode(const Column& col, std::string_view value, double* row) const {
  for (const auto s : col.slot) {
    if (s >= 0) row[s] = 0.0;
  }
  if (value.empty()) return;  // data.missing other than error: all zeros
  std::size_t i = 0;
  if (col.encoding->hashed()) {
    i = static_cast<std::size_t>(hash::bucket_of(value, col.encoding->buckets));
  } else if (const auto it = col.lookup.find(value); it != col.lookup.end()) {
    i = it->second;
  } else {
    return;  // unseen in training: all zeros
  }
  if (col.slot[i] >= 0) row[col.slot[i]] = 1.0;
}

void CategoricalCells::put(const std::vector<FieldView>& fields, double* row,
                           const std::filesystem::path& path) const {
  for (const Column& col : columns_) {
    const FieldView& cell = fields[col.source_index];
    const std::string_view value = trim_spaces(cell.text());
    if (value.empty() && !empty_is_zero_) {
      empty_cell(path.string(), cell.line, cell.column, col.encoding->column);
    }
    encode(col, value, row);
  }
}

bool CategoricalCells::put_plain(std::string_view line, char sep, double* row) const {
  // The cells of the row, cut at each separator (a plain row has no quotes); only as far as
  // the last categorical column.
  std::size_t start = 0;
  std::size_t field = 0;
  for (const Column& col : columns_) {  // in source column order
    while (field < col.source_index) {
      const auto next = line.find(sep, start);
      if (next == std::string_view::npos) return false;
      start = next + 1;
      ++field;
    }
    auto end = line.find(sep, start);
    if (end == std::string_view::npos) {  // the last field: without the line end, as PlainRow
      end = line.size();
      if (end > start && line[end - 1] == '\n') --end;
      if (end > start && line[end - 1] == '\r') --end;
    }
    const std::string_view value = trim_spaces(line.substr(start, end - start));
    if (value.empty() && !empty_is_zero_) return false;  // the general path names the cell
    encode(col, value, row);
  }
  return true;
}

}  // namespace detail
}  // namespace dt::data
