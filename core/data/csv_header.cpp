// index_csv's header row (csv_io.hpp read_header): the column names, trimmed and checked.

#include "core/data/csv_io.hpp"
#include "base/error.hpp"

#include <string_view>
#include <unordered_map>

namespace dt::data {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

void detail::read_header(CsvIndex& index, RecordReader& reader) {
  const std::string name = index.path.string();
  std::vector<CsvField> header;
  if (!reader.next(header)) {
    fail<DataError>("{}: the file is empty; expected a header row", name);
  }
  if (header.front().line != 1) {
    fail<DataError>("{}:1:1: blank line before the header row; the first line must name the columns",
                    name);
  }
  for (const auto& field : header) {
    // Lines that end with CR alone (classic Mac OS, some exports) make the whole file one line;
    // say so rather than report what that line looks like ("duplicate column name").
    const auto cr = field.text.find('\r');
    if (cr != std::string::npos && cr + 1 < field.text.size()) {
      fail<DataError>("{}:{}:{}: the header row holds a carriage return (CR): the lines of this "
                      "file end with CR alone; convert them to LF (tr '\\r' '\\n' < in.csv > "
                      "out.csv) or CRLF",
                      name, field.line, field.column + cr);
    }
  }
  std::unordered_map<std::string_view, std::size_t> seen;
  index.columns.reserve(header.size());
  for (const auto& field : header) index.columns.emplace_back(trim(field.text));
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string& column = index.columns[i];
    if (column.empty()) {
      fail<DataError>("{}:{}:{}: column {} has an empty name; every header cell needs a name",
                      name, header[i].line, header[i].column, i + 1);
    }
    const auto [it, inserted] = seen.emplace(column, i);
    if (!inserted) {
      fail<DataError>("{}:{}:{}: duplicate column name '{}' (also column {}); column names must be "
                      "unique",
                      name, header[i].line, header[i].column, column, it->second + 1);
    }
  }
}

}  // namespace dt::data
