// The data source (CSV or synthetic), the label column, and loading one shard into memory.

#include "core/data/dataset.hpp"
#include "core/data/categorical_cells.hpp"
#include "core/data/csv_cells.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/hashed_csv.hpp"
#include "core/data/label_sink.hpp"
#include "core/data/missing.hpp"
#include "core/data/npy.hpp"
#include "core/data/row_sums.hpp"
#include "core/data/libsvm.hpp"
#include "base/error.hpp"
#include "base/memory.hpp"
#include "base/prefault.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace dt::data {

std::vector<std::ptrdiff_t> detail::feature_targets(const SourceInfo& source,
                                                    const std::string& origin) {
  std::unordered_map<std::string_view, std::size_t> column_of;
  for (std::size_t c = 0; c < source.columns.size(); ++c) column_of.emplace(source.columns[c], c);
  std::vector<std::ptrdiff_t> target(source.columns.size(), -1);
  // Encoded features have no column of their own: CategoricalCells fills them.
  const auto encoded = encoded_features(source.categorical);
  for (std::size_t f = 0; f < source.features.size(); ++f) {
    if (encoded.contains(source.features[f])) continue;
    const auto it = column_of.find(source.features[f]);
    if (it == column_of.end()) {
      fail<DataError>("{}: no column '{}'{}; columns are: {}", origin, source.features[f],
                      text::suggestion_suffix(source.features[f], source.columns),
                      column_list(source.columns));
    }
    target[it->second] = static_cast<std::ptrdiff_t>(f);
  }
  if (source.label_index != kNoLabel && source.label_index >= source.columns.size()) {
    fail<DataError>("{}: label column {} is out of range ({} columns)", origin,
                    source.label_index + 1, source.columns.size());
  }
  return target;
}

namespace {

// `index` is null in a worker, which gets the byte offsets through its segments instead.
// `missing`: data.missing, what a missing feature cell becomes (missing.hpp).
// `stream`: a reader of the whole file front to back (load_stream_rows), which `segments` (one,
// of the rows wanted) does not seek; its end ends the load. Returns the rows read.
// Not `keep` (check_shard): every row is parsed into shard.x's one row, which stays in the cache.
Eigen::Index load_csv(const std::filesystem::path& path, const CsvIndex* index,
                      const SourceInfo& source, const std::vector<Segment>& segments, Shard& shard,
                      LabelKind kind, config::Missing missing,
                      detail::RecordReader* stream = nullptr, bool keep = true) {
  const std::string name = path.string();
  const std::size_t width = source.columns.size();
  const auto target = detail::feature_targets(source, name);
  const bool has_label = source.label_index != kNoLabel;
  const auto p = shard.x.cols();
  detail::LabelSink sink{shard, kind, source.label};

  // The fast path's plan of the row: what each column is for.
  std::vector<detail::CellUse> use(width, detail::CellUse::kSkip);
  std::vector<std::uint32_t> slot(width, 0);
  for (std::size_t c = 0; c < width; ++c) {
    if (target[c] < 0) continue;
    use[c] = detail::CellUse::kFeature;
    slot[c] = static_cast<std::uint32_t>(target[c]);
  }
  if (has_label) {
    use[source.label_index] = kind == LabelKind::kNumeric  ? detail::CellUse::kNumericLabel
                              : kind == LabelKind::kBinary ? detail::CellUse::kBinaryLabel
                                                           : detail::CellUse::kTextLabel;
  }
  // The index knows the separator where this process made it; a worker is told it.
  const char sep = index != nullptr ? index->delimiter : source.delimiter;
  const detail::PlainRow plain(std::move(use), std::move(slot), sep);
  // data.categorical's cells: skipped by the fast path, encoded by CategoricalCells.
  // An empty one is all zeros unless data.missing is error.
  const detail::CategoricalCells categorical(source, missing != config::Missing::kError);
  // A row longer than this that straddles the end of the buffer goes the general way.
  constexpr std::size_t kLookahead = std::size_t{16} << 10;

  std::optional<detail::RecordReader> own;
  detail::RecordReader* reader = stream;
  std::vector<detail::FieldView> fields;
  fields.reserve(width);
  Eigen::Index r = 0;
  double unused_label = 0.0;
  // column_stats's first pass on the rows just parsed (a shard kept; not a stream, which may
  // end early): one pass over the shard fewer for the worker's statistics.
  std::optional<detail::RowSums> sums;
  if (keep && stream == nullptr) sums.emplace(static_cast<std::size_t>(p));
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
      if (sums) sums->add(shard.x.data(), static_cast<std::uint64_t>(r));
      double* row = shard.x.data() + (keep ? r : 0) * p;
      double& label = has_label && kind != LabelKind::kCategorical ? shard.y(r) : unused_label;
      const std::string_view window = reader->peek(kLookahead);
      std::string_view text;
      const char* after =
          plain.parse(window.data(), window.data() + window.size(), row, label, text);
      // The fast path skips categorical cells (as text); they are encoded from the row's bytes.
      if (after != nullptr && !categorical.empty() &&
          !categorical.put_plain(
              window.substr(0, static_cast<std::size_t>(after - window.data())), sep, row)) {
        after = nullptr;
      }
      if (after != nullptr) {
        reader->consume_line(static_cast<std::size_t>(after - window.data()));
        if (!text.empty()) shard.raw_labels.emplace_back(text);
        continue;
      }
      // The general path: quoted cells, spaces, and every error message.
      if (!reader->next_views(fields)) {
        if (stream != nullptr) return r;
        fail<DataError>("{}: the file ends before data row {}; did it change after it was indexed?",
                        name, seg.first_row + k + 1);
      }
      if (fields.size() != width) {
        fail<DataError>("{}:{}:1: row has {} field{}, the header has {}", name, fields.front().line,
                        fields.size(), fields.size() == 1 ? "" : "s", width);
      }
      for (std::size_t c = 0; c < width; ++c) {
        if (target[c] < 0) continue;
        const auto& cell = fields[c];
        row[target[c]] = detail::parse_feature(cell.text(), cell.line, cell.column, path,
                                               source.columns[c], missing);
      }
      if (!categorical.empty()) categorical.put(fields, row, path);
      if (has_label) sink.put_cell(r, fields[source.label_index], path);
    }
  }
  if (sums && r > 0) shard.sums = sums->finish(shard.x.data(), static_cast<std::uint64_t>(r));
  return r;
}

void load_synthetic(const config::Config& config, const SourceInfo& source,
                    const std::vector<Segment>& segments, Shard& shard, LabelKind kind) {
  const config::SyntheticConfig& spec = *config.data.synthetic;
  const auto generated = static_cast<Eigen::Index>(spec.features);  // x0..x{P-1}, then y
  if (source.columns.size() != static_cast<std::size_t>(generated) + 1) {
    fail<DataError>("synthetic data: {} columns described, but the generator makes {}",
                    source.columns.size(), generated + 1);
  }
  const auto target = detail::feature_targets(source, "synthetic data");
  const bool has_label = source.label_index != kNoLabel;
  // The usual layout (features x0..x{P-1} in order, label y) is generated in place.
  bool in_place = has_label && source.label_index == static_cast<std::size_t>(generated);
  for (Eigen::Index c = 0; in_place && c < generated; ++c) in_place = target[static_cast<std::size_t>(c)] == c;

  detail::LabelSink sink{shard, kind, source.label};
  RowMatrix gx;
  Eigen::VectorXd gy;
  Eigen::Index r = 0;
  for (const Segment& seg : segments) {
    const auto n = static_cast<Eigen::Index>(seg.count);
    if (in_place) {
      synthesize(spec, config.seed, seg.first_row, seg.count, shard.x.middleRows(r, n),
                 shard.y.segment(r, n));
    } else {
      gx.resize(n, generated);
      gy.resize(n);
      synthesize(spec, config.seed, seg.first_row, seg.count, gx, gy);
      for (Eigen::Index k = 0; k < n; ++k) {
        for (Eigen::Index c = 0; c <= generated; ++c) {
          const double v = c < generated ? gx(k, c) : gy(k);
          const auto uc = static_cast<std::size_t>(c);
          if (target[uc] >= 0) shard.x(r + k, target[uc]) = v;
          if (has_label && uc == source.label_index) shard.y(r + k) = v;
        }
      }
    }
    if (has_label && kind != LabelKind::kNumeric) {
      for (Eigen::Index k = 0; k < n; ++k) {
        const std::string text = fmt::format("{}", shard.y(r + k));
        if (kind == LabelKind::kCategorical) shard.y(r + k) = 0.0;
        sink.put(r + k, text,
                 [&] { return fmt::format("synthetic data row {}", seg.first_row + k + 1); });
      }
    }
    r += n;
  }
}

}  // namespace

SourceInfo describe_source(const config::Config& config, unsigned index_threads,
                           const CsvIndex* indexed) {
  const config::DataConfig& data = config.data;
  SourceInfo info;
  std::string origin;
  CellScan cells;
  if (data.synthetic) {
    const auto& spec = *data.synthetic;
    if (!data.path.empty()) {
      fail<DataError>("data: both data.path and data.synthetic are set; use one of them");
    }
    if (spec.rows < 1) fail<DataError>("synthetic data: rows must be at least 1, not {}", spec.rows);
    if (spec.features < 1) {
      fail<DataError>("synthetic data: features must be at least 1, not {}", spec.features);
    }
    info.columns = synthetic_columns(spec);
    info.rows = static_cast<std::uint64_t>(spec.rows);
    origin = "synthetic data";
  } else {
    if (data.path.empty()) fail<DataError>("data: no data source; set data.path or data.synthetic");
    const auto format = data.format == config::DataFormat::kAuto
                            ? format_of(data.path, data.format, "data.path")
                            : data.format;
    if (format != config::DataFormat::kCsv && !data.categorical.empty()) {
      fail<DataError>("{}: data.categorical applies to CSV data; {} holds only numbers",
                      data.path.string(),
                      format == config::DataFormat::kLibsvm ? "a LIBSVM file" : "a NumPy array");
    }
    if (format == config::DataFormat::kNpy && data.sparse == config::SparseChoice::kOn) {
      fail<DataError>("{}: data.sparse: true applies to LIBSVM and CSV files; a NumPy array "
                      "is read dense: remove data.sparse", data.path.string());
    }
    if (format == config::DataFormat::kNpy) return describe_npy(data);
    if (format == config::DataFormat::kLibsvm) {
      if (data.missing != config::Missing::kError) {
        fail<DataError>("{}: data.missing applies to CSV and NumPy data; in a LIBSVM file an "
                        "index left out is a zero, and every value given must be a number: "
                        "remove data.missing", data.path.string());
      }
      return describe_libsvm(data);
    }
    if (format == config::DataFormat::kNpz) {
      fail<DataError>("data.path {}: an .npz archive is unpacked by the command before the run "
                      "(disttrain run / validate); this reader takes its .npy arrays",
                      data.path.string());
    }
    if (!data.labels.empty()) {
      fail<DataError>("data.labels {}: a labels file goes with a NumPy .npy data.path; for a "
                      "CSV, name the label column with data.label", data.labels.string());
    }
    // The one_hot columns' categories are gathered by the index pass (csv_cells.hpp).
    for (const auto& c : data.categorical) {
      if (c.buckets == 0) cells.names.push_back(c.column);
    }
    cells.empty_allowed = data.missing != config::Missing::kError;
    cells.max_distinct = kMaxCategories;
    info.csv = indexed != nullptr ? *indexed
                                  : index_csv(data.path, index_threads, std::uint64_t{64} << 20,
                                              data.delimiter, cells.names.empty() ? nullptr : &cells);
    if (indexed != nullptr) cells.given_up = true;  // no pass gathered categories
    info.delimiter = info.csv->delimiter;
    info.columns = info.csv->columns;
    for (const auto& column : info.columns) {
      if (!text::valid_utf8(column)) {
        fail<DataError>("{}:1: a column name is not valid UTF-8; save the file as UTF-8",
                        data.path.string());
      }
    }
    info.rows = info.csv->rows();
    origin = data.path.string();
  }

  info.label = data.label.value_or(data.synthetic ? std::string("y") : info.columns.back());
  const auto it = std::find(info.columns.begin(), info.columns.end(), info.label);
  if (it == info.columns.end()) {
    fail<DataError>("{}: no column '{}'{}; columns are: {}", origin, info.label,
                    text::suggestion_suffix(info.label, info.columns), column_list(info.columns));
  }
  info.label_index = static_cast<std::size_t>(it - info.columns.begin());
  if (info.columns.size() < 2) {
    fail<DataError>("{}: the only column is the label '{}'; there are no feature columns", origin,
                    info.label);
  }
  info.features =
      select_features(info.columns, info.label_index, data.features, data.exclude, origin);
  resolve_categorical(data, info, origin, &cells);
  if (data.hash || (data.sparse == config::SparseChoice::kOn && !data.synthetic)) {
    make_sparse_csv(data, info, origin);  // hashed_csv.hpp
  }
  return info;
}

LabelKind label_kind(config::Task task) {
  switch (task) {
    case config::Task::kRegression: return LabelKind::kNumeric;
    case config::Task::kBinary: return LabelKind::kBinary;
    case config::Task::kMulticlass: return LabelKind::kCategorical;
  }
  return LabelKind::kNumeric;
}

bool rows_by_number(const config::Config& config, const SourceInfo& source) {
  if (source.sparse || source.csv) return false;  // the index finds them (chunk_segments)
  if (!source.file.empty()) return source.file.extension() == ".npy";
  if (!config.data.path.empty()) return reads_npy(config.data);
  return config.data.synthetic.has_value();
}

namespace {

// load_shard (`keep`) and check_shard (not: the NumPy and CSV loaders then read every row into
// one row of shard.x, and x is left with none; the others keep their rows, then drop them).
Shard load_rows(const config::Config& config, const SourceInfo& source,
                const std::vector<Segment>& segments, LabelKind kind, bool keep) {
  std::uint64_t total = 0;
  for (const Segment& seg : segments) {
    if (seg.first_row + seg.count > source.rows) {
      fail<DataError>("rows {}..{} are outside the data ({} rows)", seg.first_row + 1,
                      seg.first_row + seg.count, source.rows);
    }
    total += seg.count;
  }
  if (source.sparse) return load_sparse_shard(config, source, segments, kind);
  Shard shard;
  const auto width = static_cast<Eigen::Index>(source.features.size());
  // Huge pages before the first touch: the loaders below fault every page in (y: setZero).
  shard.y.resize(static_cast<Eigen::Index>(total));
  memory::advise_huge_pages(shard.y.data(), static_cast<std::size_t>(total) * sizeof(double));
  shard.y.setZero();
  if (kind == LabelKind::kCategorical && source.label_index != kNoLabel) shard.raw_labels.reserve(total);
  // A CSV's rows are parsed far slower than the kernel zeroes their fresh pages: those are
  // faulted in on another thread meanwhile (memory::Prefaulter), off the parse's path.
  std::optional<memory::Prefaulter> fault_ahead;
  const auto rows_for = [&](bool all, bool parsed = false) {
    shard.x.resize(all ? static_cast<Eigen::Index>(total) : 1, width);
    const auto bytes = static_cast<std::size_t>(shard.x.size()) * sizeof(double);
    memory::advise_huge_pages(shard.x.data(), bytes);
    if (all && parsed) fault_ahead.emplace(shard.x.data(), bytes);
  };
  const config::Missing missing = config.data.missing;
  if (!config.data.path.empty() && source.file.empty() && reads_npy(config.data)) {
    rows_for(keep);
    load_npy(config.data, source, segments, shard, kind, keep);
  } else if (!config.data.path.empty() && source.file.empty() && reads_libsvm(config.data)) {
    rows_for(true);
    // The index's file: data.path, or a worker's own copy of it (use_local_copy).
    load_libsvm(source.csv ? source.csv->path : config.data.path, source, segments, shard, kind);
  } else if (!source.file.empty() && libsvm_content(source.file, libsvm_extension(source.file))) {
    rows_for(true);
    load_libsvm(source.file, source, segments, shard, kind);  // a worker's own LIBSVM file
  } else if (source.csv) {
    rows_for(keep, true);
    load_csv(source.csv->path, &*source.csv, source, segments, shard, kind, missing, nullptr, keep);
  } else if (!source.file.empty() && source.file.extension() == ".npy") {
    config::DataConfig own = config.data;  // a worker's own array: shards.files, --data FILE
    own.path = source.file;
    own.labels.clear();  // its labels are a column (describe_files and use_local_copy check)
    rows_for(keep);
    load_npy(own, source, segments, shard, kind, keep);
  } else if (!source.file.empty()) {
    rows_for(keep, true);
    load_csv(source.file, nullptr, source, segments, shard, kind, missing, nullptr, keep);
  } else if (config.data.synthetic) {
    rows_for(true);
    load_synthetic(config, source, segments, shard, kind);
  } else if (!config.data.path.empty()) {
    rows_for(keep, true);
    load_csv(config.data.path, nullptr, source, segments, shard, kind, missing, nullptr, keep);
  } else {
    fail<DataError>("data: no data source; set data.path or data.synthetic");
  }
  if (!keep) shard.x.resize(0, width);
  return shard;
}

}  // namespace

Shard load_shard(const config::Config& config, const SourceInfo& source,
                 const std::vector<Segment>& segments, LabelKind kind) {
  return load_rows(config, source, segments, kind, true);
}

Shard check_shard(const config::Config& config, const SourceInfo& source,
                  const std::vector<Segment>& segments, LabelKind kind) {
  return load_rows(config, source, segments, kind, false);
}

std::uint64_t detail::load_stream_rows(RecordReader& reader, const SourceInfo& source,
                                       Shard& shard, LabelKind kind, config::Missing missing) {
  const std::vector<Segment> rows{{0, static_cast<std::uint64_t>(shard.x.rows()), 0, 1}};
  return static_cast<std::uint64_t>(
      load_csv(reader.path(), nullptr, source, rows, shard, kind, missing, &reader));
}

}  // namespace dt::data
