// A worker's own copy of the data (`disttrain worker --data FILE`, dataset.hpp).

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "core/data/libsvm.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

namespace dt::data {

void use_local_copy(const std::filesystem::path& file, SourceInfo& source,
                    std::vector<Segment>& segments) {
  if (libsvm_content(file, libsvm_extension(file))) {
    fail<DataError>("--data {}: a LIBSVM file, which a worker's own copy cannot stand for yet; "
                    "put it at the coordinator's path on this host and drop --data",
                    file.string());
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
