// CellScan (csv_cells.hpp): the wanted cells of plain rows, split as categorical.cpp splits them.

#include "core/data/csv_cells.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/data_file.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace dt::data {

void CellScan::start(const std::vector<std::string>& header) {
  columns.clear();
  for (const auto& name : names) {
    const auto at = std::find(header.begin(), header.end(), name);
    if (at == header.end()) {
      given_up = true;  // the caller's own checks name the missing column
      return;
    }
    columns.push_back(static_cast<std::size_t>(at - header.begin()));
  }
  seen.assign(names.size(), {});
  given_up = given_up || columns.empty();
}

std::uint64_t CellScan::scan(const char* data, const std::vector<std::uint64_t>& offsets,
                             std::uint64_t got, bool range_end, char sep) {
  if (given_up) return got;
  const std::size_t last = *std::max_element(columns.begin(), columns.end());
  std::vector<std::string_view> cells(last + 1);
  for (; next_row < offsets.size(); ++next_row) {
    const std::uint64_t start = offsets[next_row];
    std::uint64_t end = 0;  // the row's '\n', or the data's end
    if (next_row + 1 < offsets.size()) {
      end = offsets[next_row + 1] - 1;
    } else if (range_end) {
      const auto* nl = static_cast<const char*>(std::memchr(data + start, '\n', got - start));
      end = nl == nullptr ? got : static_cast<std::uint64_t>(nl - data);
    } else {
      // Its end is not known yet: the next window. A row longer than a window is given up.
      if (got - start > detail::MappedFile::kWindow) given_up = true;
      return given_up ? got : start;
    }
    std::string_view rest(data + start, end - start);
    if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
    for (std::size_t c = 0; c <= last; ++c) {
      const std::size_t cut = rest.find(sep);
      cells[c] = rest.substr(0, cut);
      if (cells[c].find('"') != std::string_view::npos || (cut == std::string_view::npos && c < last)) {
        given_up = true;  // quoted (the record parser splits it), or short (the index refuses it)
        return got;
      }
      if (cut != std::string_view::npos) rest.remove_prefix(cut + 1);
    }
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const std::string_view value = detail::trim_spaces(cells[columns[k]]);
      if (value.empty()) {
        if (empty_allowed) continue;
        given_up = true;
        return got;
      }
      auto& values = seen[k];
      if (values.find(value) != values.end()) continue;
      if (!text::valid_utf8(value) || values.size() == max_distinct) {
        given_up = true;
        return got;
      }
      values.emplace(value);
    }
  }
  return got;
}

void CellScan::merge(CellScan&& tail) {
  given_up = given_up || tail.given_up;
  if (given_up) return;
  for (std::size_t k = 0; k < seen.size(); ++k) {
    seen[k].merge(tail.seen[k]);
    if (seen[k].size() > max_distinct) given_up = true;
  }
  next_row += tail.next_row;
}

}  // namespace dt::data
