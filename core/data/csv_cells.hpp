#pragma once
// Internal to core/data: the distinct values of a few columns, gathered by index_csv while each
// row is in cache, so that data.categorical's one_hot columns (categorical.cpp) cost no pass over
// the file of their own: on a 2 GB file a second pass costs mapping every page again.
//
// Only the plain case is gathered: a row whose cells up to the last wanted one hold no quote.
// Anything else (such a quote, an empty cell where none is allowed, a value that is not UTF-8,
// more than max_distinct values in a column, a row longer than a window, a file read without a
// mapping, a wanted column the header lacks) gives up: complete() is then false, and the caller
// reads the file as before, which reports any error with its line and column.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace dt::data {

struct CellScan {
  // Set by the caller: the wanted columns by name, the rule for empty cells and the limit.
  std::vector<std::string> names;
  bool empty_allowed = false;
  std::size_t max_distinct = 0;

  // Set by index_csv: the names' source columns (after the header), then the values found.
  std::vector<std::size_t> columns;
  std::vector<std::set<std::string, std::less<>>> seen;  // per name
  std::uint64_t next_row = 0;  // the first row not yet scanned
  bool given_up = false;

  // Ready to scan rows once the header's columns are known; gives up when a name is not one.
  void start(const std::vector<std::string>& header);
  // Scans the rows offsets[next_row ..] whose wanted cells end before `got` (`data` maps the
  // file; row i ends where row i + 1 starts; at `range_end` the data ends too). Returns the
  // offset from which the pages must stay mapped: the start of the first row not yet scanned,
  // or `got`.
  std::uint64_t scan(const char* data, const std::vector<std::uint64_t>& offsets,
                     std::uint64_t got, bool range_end, char sep);
  // Takes the values of `tail`, which scanned the rows after this one's.
  void merge(CellScan&& tail);
  // Every one of `rows` rows scanned, nothing given up.
  [[nodiscard]] bool complete(std::uint64_t rows) const noexcept {
    return !given_up && !columns.empty() && next_row == rows;
  }
};

}  // namespace dt::data
