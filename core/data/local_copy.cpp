// A worker's own copy of the data (`disttrain worker --data FILE`, dataset.hpp).

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "core/data/libsvm.hpp"
#include "core/data/npy.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::data {

namespace {

// An .npy copy: as many columns (the label among them) and rows as the coordinator's array.
void use_local_array(const std::filesystem::path& file, const config::DataConfig& data,
                     SourceInfo& source, std::vector<Segment>& segments) {
  if (!data.labels.empty()) {
    fail<DataError>("--data {}: this run's labels are a separate file (data.labels {}), which a "
                    "worker's own copy cannot bring; put both arrays at the coordinator's paths "
                    "on this host and drop --data, or save the labels as the array's last column",
                    file.string(), data.labels.string());
  }
  const NpyArray array = read_npy_header(file);
  if (array.cols != source.columns.size() || array.rows != source.rows) {
    fail<DataError>("--data {}: it holds {} rows of {} columns, the coordinator's data {} rows "
                    "of {}; give this worker a copy of the same array",
                    file.string(), array.rows, array.cols, source.rows, source.columns.size());
  }
  // Rows are found by number (the array's columns by position, as the coordinator's are).
  for (auto& seg : segments) {
    seg.byte_offset = 0;
    seg.line = 0;
  }
  source.csv.reset();
  source.file = file;
}

// A LIBSVM copy: the coordinator's data is LIBSVM too, with as many rows, and no index past
// its features (the copy's rows are found by number in its own index).
void use_local_libsvm(const std::filesystem::path& file, const config::DataConfig& data,
                      SourceInfo& source, std::vector<Segment>& segments) {
  // A LIBSVM source's features are f<index>, its label y (describe_libsvm); the coordinator's
  // file itself may not be on this host, which is why a copy is given.
  const bool numbered = std::all_of(source.features.begin(), source.features.end(), [](const auto& f) {
    return f.size() > 1 && f[0] == 'f' && f.find_first_not_of("0123456789", 1) == std::string::npos;
  });
  if (!reads_libsvm(data) && !(numbered && source.label == "y" && !source.features.empty())) {
    fail<DataError>("--data {}: a LIBSVM file, but the coordinator's data {} is not; give this "
                    "worker a copy of the same file", file.string(), data.path.string());
  }
  LibsvmIndex index = index_libsvm(file);
  if (index.rows.rows() != source.rows) {
    fail<DataError>("--data {}: it has {} rows, the coordinator's data has {}; give this worker "
                    "a copy of the same file", file.string(), index.rows.rows(), source.rows);
  }
  const std::string& last = source.features.back();  // f<index>: the widest index there is
  if (index.max_index_line != 0 && index.max_index > std::stoull(last.substr(1))) {
    fail<DataError>("--data {}:{}: index {} is past the coordinator's last feature, {}; give "
                    "this worker a copy of the same file", file.string(), index.max_index_line,
                    index.max_index, last);
  }
  for (auto& seg : segments) {
    seg.byte_offset = 0;
    seg.line = 0;
  }
  source.file.clear();
  source.csv = std::move(index.rows);
}

}  // namespace

void use_local_copy(const std::filesystem::path& file, const config::DataConfig& data,
                    SourceInfo& source, std::vector<Segment>& segments) {
  if (format_of(file, config::DataFormat::kAuto, "--data") == config::DataFormat::kNpy) {
    use_local_array(file, data, source, segments);
    return;
  }
  if (libsvm_content(file, libsvm_extension(file))) {
    use_local_libsvm(file, data, source, segments);
    return;
  }
  CsvIndex index = index_csv(file);
  if (index.columns != source.columns) {
    std::string where;
    for (std::size_t i = 0; i < std::max(index.columns.size(), source.columns.size()); ++i) {
      const auto mine = i < index.columns.size() ? index.columns[i] : std::string("(none)");
      const auto theirs = i < source.columns.size() ? source.columns[i] : std::string("(none)");
      if (mine != theirs) {
        where = fmt::format("column {} is '{}' here and '{}' in the coordinator's data", i + 1,
                            mine, theirs);
        break;
      }
    }
    fail<DataError>("--data {}: its columns differ from the coordinator's data ({}); give this "
                    "worker a copy of the same file",
                    file.string(), where);
  }
  if (index.rows() != source.rows) {
    fail<DataError>("--data {}: it has {} data rows, the coordinator's data has {}; give this "
                    "worker a copy of the same file",
                    file.string(), index.rows(), source.rows);
  }
  // Rows are found by number in this file's own index: a copy saved with other line endings
  // or quoting still lines up.
  for (auto& seg : segments) {
    seg.byte_offset = 0;
    seg.line = 0;
  }
  source.file.clear();
  source.csv = std::move(index);
}

}  // namespace dt::data
