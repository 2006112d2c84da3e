// A LIBSVM data.path as a dense dataset (libsvm.hpp): the coordinator's index and description,
// and a worker's load of its rows. The line parser is libsvm_parse.cpp.

#include "core/data/libsvm.hpp"
#include "core/data/data_file.hpp"
#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>

namespace dt::data {
namespace {

// More columns than this are refused before their names are made: a dense row of them is
// 32 MiB, and training that wide wants the sparse models of issue 16.
constexpr std::uint64_t kMaxLibsvmColumns = std::uint64_t{1} << 22;
// Sparse rows: what data.hash allows too (bits <= 30); docs/sparse.md, "Widths and memory".
constexpr std::uint64_t kMaxSparseWidth = std::uint64_t{1} << 30;

[[noreturn]] void line_error(const std::filesystem::path& path, std::uint64_t line,
                             const LibsvmProblem& problem) {
  fail<DataError>("{}:{}:{}: {}", path.string(), line, problem.column, problem.what);
}

// The index of a feature named f<index>, or -1.
std::int64_t feature_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'f') return -1;
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), v);
  if (ec != std::errc{} || ptr != name.data() + name.size() || v > kMaxLibsvmIndex) return -1;
  return static_cast<std::int64_t>(v);
}

}  // namespace

bool libsvm_content(const std::filesystem::path& path, bool lenient) {
  const detail::FileHandle file(path);
  std::string head(std::size_t{64} << 10, '\0');
  head.resize(file.read_at(0, head.data(), head.size()));
  if (head.size() < file.size()) {  // cut at the last whole line (or token) read
    const auto cut = head.rfind('\n');
    head.resize(cut != std::string::npos ? cut : head.find_last_of(" \t") + 1);
  }
  return looks_like_libsvm(head, lenient);
}

bool reads_libsvm(const config::DataConfig& data) {
  return data.format == config::DataFormat::kLibsvm ||
         (data.format == config::DataFormat::kAuto && libsvm_extension(data.path));
}

LibsvmIndex index_libsvm(const std::filesystem::path& path) {
  LibsvmIndex index;
  index.rows.path = path;
  index.rows.delimiter = ' ';
  LineSource source(path, 0, 1);
  index.rows.file_size = source.file_size();
  LibsvmRow row;
  LibsvmProblem problem;
  std::string_view text;
  std::uint64_t start = 0, number = 0;
  while (source.next(text, start, number)) {
    const LineKind kind = parse_libsvm_line(text, row, problem, /*values=*/false);
    if (kind == LineKind::kBlank) continue;
    if (kind == LineKind::kError) line_error(path, number, problem);
    index.rows.row_offset.push_back(start);
    index.rows.row_line.push_back(number);
    if (row.entries.empty()) continue;
    if (row.entries.back().index > index.max_index || index.max_index_line == 0) {
      index.max_index = row.entries.back().index;
      index.max_index_line = number;
    }
    if (row.entries.front().index == 0 && index.zero_index_line == 0) index.zero_index_line = number;
  }
  if (index.rows.rows() == 0) {
    fail<DataError>("{}: no rows; a LIBSVM file has lines like `1 3:0.5 7:1` (label, then "
                    "index:value pairs)", path.string());
  }
  return index;
}

SourceInfo describe_libsvm(const config::DataConfig& data) {
  const std::string name = data.path.string();
  if (!data.labels.empty()) {
    fail<DataError>("data.labels {}: a LIBSVM file holds its labels (the first number of each "
                    "line); remove data.labels", data.labels.string());
  }
  if (data.label && *data.label != "y") {
    fail<DataError>("{}: data.label '{}': a LIBSVM file's label is the first number of each "
                    "line, named 'y'; remove data.label", name, *data.label);
  }
  LibsvmIndex index = index_libsvm(data.path);
  const std::uint64_t base = data.index_base >= 0 ? static_cast<std::uint64_t>(data.index_base)
                                                  : (index.zero_index_line != 0 ? 0 : 1);
  if (base == 1 && index.zero_index_line != 0) {
    fail<DataError>("{}:{}: index 0, but data.index_base is 1 (features count from 1, as LIBSVM "
                    "writes them); set data.index_base: 0 (or auto) for a file counted from 0",
                    name, index.zero_index_line);
  }
  std::uint64_t width = 0;
  if (data.feature_count > 0) {
    width = static_cast<std::uint64_t>(data.feature_count);
    if (index.max_index_line != 0 && index.max_index >= base + width) {
      fail<DataError>("{}:{}: index {} is past data.feature_count {} (the last feature is f{}); "
                      "raise data.feature_count, or remove it to take the file's largest index",
                      name, index.max_index_line, index.max_index, width, base + width - 1);
    }
  } else {
    if (index.max_index_line == 0) {
      fail<DataError>("{}: no line has an index:value pair, so there are no features; set "
                      "data.feature_count if every value is 0", name);
    }
    width = index.max_index - base + 1;
  }
  const std::uint64_t rows = index.rows.rows();
  const double dense_gib = static_cast<double>(rows) * static_cast<double>(width) * 8.0 /
                           static_cast<double>(std::uint64_t{1} << 30);
  const bool too_wide = width > kMaxLibsvmColumns;
  // data.sparse: auto keeps rows sparse where the dense matrix would be refused.
  if (data.sparse == config::SparseChoice::kOn ||
      (data.sparse == config::SparseChoice::kAuto && data.features.empty() && data.exclude.empty() &&
       (too_wide || dense_gib > data.max_dense_gib))) {
    if (!data.features.empty() || !data.exclude.empty()) {
      fail<DataError>("{}: data.features and data.exclude select dense columns; sparse LIBSVM "
                      "rows keep every index: remove them (or set data.sparse: false)", name);
    }
    if (width > kMaxSparseWidth) {
      fail<DataError>("{}: {} features (the largest index is {}) are more than sparse models take "
                      "(2^30: the coordinator keeps the weights, their gradient and the "
                      "optimizer's state dense, 8 bytes each a feature); re-number the features "
                      "or hash them into fewer keys",
                      name, width, index.max_index);
    }
    SourceInfo info;
    info.rows = rows;
    info.columns = {"y"};
    info.label = std::string{"y"};
    info.label_index = 0;
    info.sparse = SparseSource{.width = width, .index_base = base};
    info.csv = std::move(index.rows);
    return info;
  }
  if (too_wide) {
    fail<DataError>("{}: {} features (the largest index is {}) are more than the dense LIBSVM "
                    "loader takes ({}); set data.sparse: auto (or true) to keep the rows sparse",
                    name, width, index.max_index, kMaxLibsvmColumns);
  }
  const auto check_size = [&](std::uint64_t features) {
    const double bytes = static_cast<double>(rows) * static_cast<double>(features) * 8.0;
    const double gib = static_cast<double>(std::uint64_t{1} << 30);
    if (bytes <= data.max_dense_gib * gib) return;
    fail<DataError>("{}: {} rows x {} features is {:.3g} GiB as dense float64, more than "
                    "data.max_dense_gib ({}); set data.sparse: auto (or true) to keep the rows "
                    "sparse, raise data.max_dense_gib if the machines have the memory (the rows "
                    "are split over the workers), or select fewer features with data.features",
                    name, rows, features, bytes / gib, data.max_dense_gib);
  };
  // Before the names are made, when every column is a feature (no data.features).
  if (data.features.empty() && width > data.exclude.size()) check_size(width - data.exclude.size());
  SourceInfo info;
  info.rows = rows;
  info.columns.reserve(width + 1);
  for (std::uint64_t i = 0; i < width; ++i) info.columns.push_back(fmt::format("f{}", base + i));
  info.columns.emplace_back("y");
  info.label = std::string{"y"};  // not = "y": GCC 12 -Wrestrict false positive (PR105329)
  info.label_index = width;
  info.features = select_features(info.columns, info.label_index, data.features, data.exclude, name);
  check_size(info.features.size());
  info.csv = std::move(index.rows);
  return info;
}

static void for_each_libsvm_row(const std::filesystem::path& path, const SourceInfo& source,
                                const std::vector<Segment>& segments, Shard& shard,
                                LabelKind kind,
                                const std::function<void(Eigen::Index, const LibsvmRow&)>& store) {
  const std::string name = path.string();
  const bool has_label = source.label_index != kNoLabel;
  std::optional<LineSource> lines;
  LibsvmRow row;
  LibsvmProblem problem;
  std::string_view text;
  std::uint64_t start = 0, number = 0;
  Eigen::Index r = 0;
  for (const Segment& seg : segments) {
    std::uint64_t offset = seg.byte_offset;
    std::uint64_t line = seg.line;
    if (line == 0) {  // segments made without the index: look the row up if this process has it
      if (!source.csv || seg.first_row >= source.csv->rows()) {
        fail<DataError>("{}: no byte offset for data row {}; segments for a LIBSVM file need "
                        "the index", name, seg.first_row + 1);
      }
      offset = source.csv->row_offset[seg.first_row];
      line = source.csv->row_line[seg.first_row];
    }
    if (!lines) {
      lines.emplace(path, offset, line);
    } else {
      lines->seek(offset, line);
    }
    for (std::uint64_t k = 0; k < seg.count; ++k, ++r) {
      LineKind got = LineKind::kBlank;
      while (got == LineKind::kBlank) {
        if (!lines->next(text, start, number)) {
          fail<DataError>("{}: the file ends before data row {}; did it change after it was "
                          "indexed?", name, seg.first_row + k + 1);
        }
        got = parse_libsvm_line(text, row, problem);
      }
      if (got == LineKind::kError) line_error(path, number, problem);
      store(r, row);
      if (!has_label) continue;
      const double v = row.label_value;
      switch (kind) {
        case LabelKind::kNumeric:
          shard.y(r) = v;
          break;
        case LabelKind::kBinary:
          if (v != 1.0 && v != 0.0 && v != -1.0) {
            fail<DataError>("{}:{}:1: label {} is not 0 or 1 (nor -1 or +1, as svmlight writes "
                            "them); logistic_regression and binary mlp need two classes (use "
                            "softmax_regression for more)", name, number, row.label);
          }
          shard.y(r) = v == 1.0 ? 1.0 : 0.0;
          break;
        case LabelKind::kCategorical:
          shard.raw_labels.push_back(fmt::format("{}", v == 0.0 ? 0.0 : v));  // "1", "+1" and "1.0" are class 1
          break;
      }
    }
  }
}

void load_libsvm(const std::filesystem::path& path, const SourceInfo& source,
                 const std::vector<Segment>& segments, Shard& shard, LabelKind kind) {
  const std::string name = path.string();
  std::vector<std::int32_t> slot;  // file index -> feature column, -1: not a feature
  for (std::size_t f = 0; f < source.features.size(); ++f) {
    const std::int64_t index = feature_index(source.features[f]);
    if (index < 0) {
      fail<DataError>("{}: feature '{}' is not a LIBSVM column; a LIBSVM file's features are "
                      "named f<index> (f1, f2, ...), so a model trained on other columns "
                      "cannot read it", name, source.features[f]);
    }
    const auto at = static_cast<std::size_t>(index);
    if (at >= slot.size()) slot.resize(at + 1, -1);
    slot[at] = static_cast<std::int32_t>(f);
  }
  const auto p = static_cast<std::size_t>(shard.x.cols());
  for_each_libsvm_row(path, source, segments, shard, kind,
                      [&](Eigen::Index r, const LibsvmRow& row) {
    double* x = shard.x.data() + static_cast<std::size_t>(r) * p;
    std::fill(x, x + p, 0.0);
    for (const SparseEntry& e : row.entries) {
      if (e.index < slot.size() && slot[e.index] >= 0) x[slot[e.index]] = e.value;
    }
  });
}

void load_libsvm_sparse(const std::filesystem::path& path, const SourceInfo& source,
                        const std::vector<Segment>& segments, Shard& shard, LabelKind kind,
                        std::uint64_t* outside) {
  const SparseSource& sparse = *source.sparse;
  SparseRows& rows = *shard.sparse;
  std::vector<KeyValue> entries;
  for_each_libsvm_row(path, source, segments, shard, kind,
                      [&](Eigen::Index, const LibsvmRow& row) {
    entries.clear();
    for (const SparseEntry& e : row.entries) {
      // The index checked the indices against the width; a worker's own copy of the file
      // (use_local_copy) was not, so a line past it is refused here.
      if (e.index < sparse.index_base || e.index - sparse.index_base >= sparse.width) {
        if (outside != nullptr) {
          ++*outside;
          continue;
        }
        fail<DataError>("{}: index {} is outside the {} features from {} (data.feature_count, "
                        "data.index_base); did the file change after it was indexed?",
                        path.string(), e.index, sparse.width, sparse.index_base);
      }
      if (e.value == 0.0) continue;  // an explicit zero is no nonzero
      entries.push_back({static_cast<std::uint32_t>(e.index - sparse.index_base), e.value});
    }
    rows.append_sorted(entries.data(), entries.size());
  });
}

}  // namespace dt::data
