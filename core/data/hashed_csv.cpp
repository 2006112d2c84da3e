// Sparse rows from a CSV (hashed_csv.hpp): the layout from data.hash, the keys, the loader.

#include "core/data/hashed_csv.hpp"
#include "core/data/hashed_rows.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/label_sink.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "base/memory.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace dt::data {
namespace {

using detail::fnv_more;
using detail::top_bits;

static_assert(fnv_more(hash::fnv1a64("ab"), "cd") == hash::fnv1a64("abcd"));

// The column's index in `columns`, or DataError naming what `role` it plays.
std::size_t column_at(const SourceInfo& info, const std::string& name, const char* key,
                      const std::string& origin) {
  const auto it = std::find(info.columns.begin(), info.columns.end(), name);
  if (it == info.columns.end()) {
    fail<DataError>("{}: {}: no column '{}'{}; columns are: {}", origin, key, name,
                    text::suggestion_suffix(name, info.columns), column_list(info.columns));
  }
  const auto at = static_cast<std::size_t>(it - info.columns.begin());
  if (at == info.label_index) {
    fail<DataError>("{}: {}: '{}' is the label column; a label cannot be a feature: remove it "
                    "from {} (or name another label with data.label)", origin, key, name, key);
  }
  return at;
}

// Reserves the keys and values of `total` rows at the nonzeros a row that `probe` loaded rows
// had (with 1/32 to spare), when that is more than they hold.
void reserve_for(SparseRows& rows, std::uint64_t nonzeros, Eigen::Index probe, std::uint64_t total) {
  const double per_row = static_cast<double>(nonzeros) / static_cast<double>(probe);
  const auto want = static_cast<std::size_t>(per_row * static_cast<double>(total) * (1.0 + 1.0 / 32)) + 64;
  if (want > rows.keys.capacity()) {
    memory::reserve_huge(rows.keys, want);  // read a shuffled row at a time (memory.hpp)
    memory::reserve_huge(rows.values, want);
  }
}

detail::HashPlan plan_of(const SourceInfo& source, const std::string& origin) {
  const SparseSource& sparse = *source.sparse;
  if (!sparse.hashed.empty() && (sparse.hash_bits < 1 || sparse.hash_bits > 30)) {
    fail<DataError>("{}: {} hashed columns need data.hash.bits from 1 to 30, not {}", origin,
                    sparse.hashed.size(), sparse.hash_bits);
  }
  detail::HashPlan p;
  p.bits = sparse.hash_bits;
  for (const auto& name : sparse.hashed) {
    p.hashed.push_back(column_at(source, name, "data.hash.columns", origin));
    p.prefix.push_back(fnv_more(hash::fnv1a64(name), "="));
  }
  const auto slot = [&](const std::string& name) {
    const auto it = std::find(sparse.hashed.begin(), sparse.hashed.end(), name);
    if (it == sparse.hashed.end()) {
      fail<DataError>("{}: data.hash.crosses: column '{}' is not in data.hash.columns; a cross "
                      "pairs two hashed columns: add it to data.hash.columns", origin, name);
    }
    return static_cast<std::size_t>(it - sparse.hashed.begin());
  };
  for (const auto& [a, b] : sparse.crosses) {
    p.crosses.emplace_back(slot(a), slot(b));
    p.cross_names.push_back(sparse.hashed[p.crosses.back().second]);
  }
  for (const auto& name : sparse.numeric) p.numeric.push_back(column_at(source, name, "data.features", origin));
  p.numeric_base = sparse.hash_bits == 0 ? 0 : std::uint32_t{1} << sparse.hash_bits;
  return p;
}

}  // namespace

std::uint32_t hashed_key(std::string_view column, std::string_view value, int bits) noexcept {
  return top_bits(fnv_more(fnv_more(hash::fnv1a64(column), "="), value), bits);
}

std::uint32_t crossed_key(std::string_view a, std::string_view x, std::string_view b,
                          std::string_view y, int bits) noexcept {
  std::uint64_t h = fnv_more(fnv_more(hash::fnv1a64(a), "="), x);
  h = fnv_more(h, std::string_view(&kCrossSeparator, 1));
  return top_bits(fnv_more(fnv_more(fnv_more(h, b), "="), y), bits);
}

void make_sparse_csv(const config::DataConfig& data, SourceInfo& info, const std::string& origin) {
  if (!info.categorical.empty()) {
    fail<DataError>("{}: data.categorical makes dense features; with data.sparse: true, hash "
                    "the columns with data.hash instead", origin);
  }
  SparseSource sparse;
  if (data.hash) {
    sparse.hash_bits = data.hash->bits;
    sparse.hashed = data.hash->columns;
    sparse.crosses = data.hash->crosses;
  }
  for (const auto& f : info.features) {
    if (std::find(sparse.hashed.begin(), sparse.hashed.end(), f) == sparse.hashed.end()) {
      sparse.numeric.push_back(f);
    }
  }
  const std::uint64_t buckets = sparse.hash_bits == 0 ? 0 : std::uint64_t{1} << sparse.hash_bits;
  sparse.width = buckets + sparse.numeric.size();
  if (sparse.width > (std::uint64_t{1} << 32)) {
    fail<DataError>("{}: 2^{} hashed keys and {} numeric columns are more keys than 32 bits "
                    "hold; lower data.hash.bits", origin, sparse.hash_bits, sparse.numeric.size());
  }
  info.sparse = std::move(sparse);
  info.features.clear();
  (void)plan_of(info, origin);  // every column found, none the label, crosses of hashed columns
}

std::uint64_t load_sparse_csv(const std::filesystem::path& path, const CsvIndex* index,
                              const SourceInfo& source, const std::vector<Segment>& segments,
                              Shard& shard, LabelKind kind, config::Missing missing,
                              bool fast_path, detail::RecordReader* stream) {
  const std::string name = path.string();
  const detail::HashPlan plan = plan_of(source, name);
  const int bits = plan.bits;
  const bool has_label = source.label_index != kNoLabel;
  const std::size_t width = source.columns.size();
  detail::LabelSink sink{shard, kind, source.label};
  const char sep = index != nullptr ? index->delimiter : source.delimiter;
  SparseRows& rows = *shard.sparse;

  std::optional<detail::RecordReader> own;
  detail::RecordReader* reader = stream;
  std::vector<detail::FieldView> fields;
  std::vector<KeyValue> entries;
  std::vector<std::uint64_t> state(plan.hashed.size());  // fnv1a64("column=value")
  std::vector<char> present(plan.hashed.size());        // the cell has a value
  const detail::HashedLabel label_use =
      !has_label                       ? detail::HashedLabel::kNone
      : kind == LabelKind::kNumeric    ? detail::HashedLabel::kNumeric
      : kind == LabelKind::kBinary     ? detail::HashedLabel::kBinary
                                       : detail::HashedLabel::kText;
  detail::HashedRow plain(plan, width, has_label ? source.label_index : 0, label_use, missing, sep);
  // A row longer than this that straddles the end of the buffer goes the general way.
  constexpr std::size_t kLookahead = std::size_t{16} << 10;
  double unused_label = 0.0;
  std::uint64_t fast_rows = 0;
  std::vector<std::uint32_t> sorted;  // a row's hashed keys (append_hashed_row)
  // The CSR's arrays are reserved once, from the nonzeros of the first rows (growing them by
  // doubling would copy them and fault in their pages again, a third of the load's time).
  std::uint64_t total = 0;
  for (const Segment& seg : segments) total += seg.count;
  constexpr Eigen::Index kProbeRows = 1000;
  const std::uint64_t first_key = rows.keys.size();
  Eigen::Index r = 0;
  for (const Segment& seg : segments) {
    std::uint64_t offset = seg.byte_offset;
    std::uint64_t line = seg.line;
    if (stream != nullptr) {
      // read on from where the stream is
    } else if (line == 0) {  // segments made without the index: look the row up if this process has it
      if (index == nullptr || seg.first_row >= index->rows()) {
        fail<DataError>("{}: no byte offset for data row {}; segments for a CSV need the index",
                        name, seg.first_row + 1);
      }
      offset = index->row_offset[seg.first_row];
      line = index->row_line[seg.first_row];
    }
    if (stream == nullptr) reader = &detail::reader_at(own, path, offset, line, sep);
    for (std::uint64_t k = 0; k < seg.count; ++k, ++r) {
      if (r == kProbeRows) reserve_for(rows, rows.keys.size() - first_key, r, total);
      if (fast_path) {
        const std::string_view window = reader->peek(kLookahead);
        double& label = label_use == detail::HashedLabel::kNumeric ||
                                label_use == detail::HashedLabel::kBinary
                            ? shard.y(r)
                            : unused_label;
        std::string_view text;
        const char* after =
            plain.parse(window.data(), window.data() + window.size(), entries, label, text);
        if (after != nullptr) {
          reader->consume_line(static_cast<std::size_t>(after - window.data()));
          detail::append_hashed_row(rows, entries, plain.hashed_entries(), bits, sorted);
          if (label_use == detail::HashedLabel::kText) shard.raw_labels.emplace_back(text);
          ++fast_rows;
          continue;
        }
      }
      // The general path: quoted cells, and every error message.
      if (!reader->next_views(fields)) {
        if (stream != nullptr) return fast_rows;
        fail<DataError>("{}: the file ends before data row {}; did it change after it was indexed?",
                        name, seg.first_row + k + 1);
      }
      if (fields.size() != width) {
        fail<DataError>("{}:{}:1: row has {} field{}, the header has {}", name, fields.front().line,
                        fields.size(), fields.size() == 1 ? "" : "s", width);
      }
      entries.clear();
      for (std::size_t h = 0; h < plan.hashed.size(); ++h) {
        const auto& cell = fields[plan.hashed[h]];
        const std::string_view value = cell.text();
        present[h] = !value.empty();
        if (value.empty()) {
          if (missing == config::Missing::kError) {
            refuse_missing(fmt::format("{}:{}:{}: column '{}'", name, cell.line, cell.column,
                                       source.sparse->hashed[h]), "an empty cell");
          }
          continue;  // zero or mean: no key
        }
        state[h] = fnv_more(plan.prefix[h], value);
        entries.push_back({top_bits(state[h], bits), 1.0});
      }
      for (const auto& [a, b] : plan.crosses) {
        if (!present[a] || !present[b]) continue;  // a missing half: no cross key
        std::uint64_t s = fnv_more(state[a], std::string_view(&kCrossSeparator, 1));
        s = fnv_more(fnv_more(fnv_more(s, source.sparse->hashed[b]), "="),
                     fields[plan.hashed[b]].text());
        entries.push_back({top_bits(s, bits), 1.0});
      }
      const std::size_t hashed_entries = entries.size();
      for (std::size_t n = 0; n < plan.numeric.size(); ++n) {
        const auto& cell = fields[plan.numeric[n]];
        const double v = detail::parse_feature(cell.text(), cell.line, cell.column, path,
                                               source.sparse->numeric[n], missing);
        if (std::isnan(v) || v == 0.0) continue;  // missing (zero or mean) or zero: no key
        entries.push_back({plan.numeric_base + static_cast<std::uint32_t>(n), v});
      }
      detail::append_hashed_row(rows, entries, hashed_entries, bits, sorted);
      if (has_label) sink.put_cell(r, fields[source.label_index], path);
    }
  }
  return fast_rows;
}

Shard load_sparse_shard(const config::Config& config, const SourceInfo& source,
                        const std::vector<Segment>& segments, LabelKind kind) {
  std::uint64_t total = 0;
  for (const Segment& seg : segments) total += seg.count;
  Shard shard;
  shard.x.resize(static_cast<Eigen::Index>(total), 0);
  shard.y = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(total));
  shard.sparse.emplace();
  shard.sparse->width = source.sparse->width;
  memory::reserve_huge(shard.sparse->row_start, total + 1);
  if (kind == LabelKind::kCategorical && source.label_index != kNoLabel) shard.raw_labels.reserve(total);
  if (source.file.empty() && !config.data.path.empty() && reads_libsvm(config.data)) {
    load_libsvm_sparse(config.data.path, source, segments, shard, kind);
  } else if (source.csv) {
    load_sparse_csv(source.csv->path, &*source.csv, source, segments, shard, kind,
                    config.data.missing);
  } else {
    load_sparse_csv(source.file.empty() ? config.data.path : source.file, nullptr, source,
                    segments, shard, kind, config.data.missing);
  }
  shard.sparse->shrink();
  return shard;
}

}  // namespace dt::data
