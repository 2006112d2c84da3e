// CellScan (core/data/csv_cells.hpp): a one_hot column's categories gathered by the index pass,
// equal to what categorical.cpp's own pass finds, and given up on anything but plain rows.

#include "core/data/csv.hpp"
#include "core/data/csv_cells.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using dt::test::CsvFile;
using Values = std::set<std::string, std::less<>>;

// index_csv of `content` gathering `names` (one thread, or two halves from 1 byte on).
dt::data::CellScan scanned(const std::string& content, std::vector<std::string> names,
                           unsigned threads = 1, bool empty_allowed = false,
                           std::size_t max_distinct = 1000) {
  const CsvFile file(content);
  dt::data::CellScan cells;
  cells.names = std::move(names);
  cells.empty_allowed = empty_allowed;
  cells.max_distinct = max_distinct;
  const auto index = dt::data::index_csv(file.path, threads, threads > 1 ? 1 : 1U << 26, 0, &cells);
  CHECK(cells.next_row <= index.rows());
  if (!cells.given_up) CHECK(cells.complete(index.rows()));
  return cells;
}

// `rows` rows of "id,shop,x,label" with shop s0 .. s{distinct - 1}.
std::string shops(int rows, int distinct) {
  std::string out = "id,shop,x,label\n";
  for (int r = 0; r < rows; ++r) {
    out += std::to_string(r) + ",s" + std::to_string(r % distinct) + "," + std::to_string(r) + ".5,1\n";
  }
  return out;
}

}  // namespace

TEST_CASE("cell scan: the distinct values of each wanted column, trimmed, any column order") {
  const auto cells = scanned("a,b,c,y\n1, red ,x,0\n2,blue,y,1\r\n3,red,x,0\n", {"c", "b"});
  REQUIRE(cells.complete(3));
  CHECK(cells.seen[0] == Values{"x", "y"});
  CHECK(cells.seen[1] == Values{"blue", "red"});
  // The last column, CRLF line ends and no newline at the end.
  const auto last = scanned("y,c\r\n0,p\r\n1,q", {"c"});
  REQUIRE(last.complete(2));
  CHECK(last.seen[0] == Values{"p", "q"});
}

TEST_CASE("cell scan: two halves indexed at once give the one pass's values") {
  const std::string content = shops(5000, 7);
  const auto one = scanned(content, {"shop"}, 1);
  const auto two = scanned(content, {"shop"}, 2);
  REQUIRE(one.complete(5000));
  REQUIRE(two.complete(5000));
  CHECK(one.seen == two.seen);
  CHECK(two.seen[0].size() == 7);
}

TEST_CASE("cell scan: rows across the 1 MiB windows, and a row longer than one") {
  const std::string content = shops(120000, 9);  // about 2.3 MB: rows straddle each window
  for (const unsigned threads : {1U, 2U}) {
    const auto cells = scanned(content, {"shop"}, threads);
    REQUIRE(cells.complete(120000));
    CHECK(cells.seen[0].size() == 9);
  }
  const std::string longer = "shop,text\na," + std::string(3U << 20, 'x') + "\nb,y\n";
  CHECK(scanned(longer, {"shop"}).given_up);
}

TEST_CASE("cell scan: a quote after the wanted cells is fine; before or in them it gives up") {
  const auto after = scanned("id,shop,text\n1,a,\"x,\ny\"\n2,b,z\n", {"shop"});
  REQUIRE(after.complete(2));
  CHECK(after.seen[0] == Values{"a", "b"});
  CHECK(scanned("id,shop,y\n\"1\",a,0\n", {"shop"}).given_up);
  CHECK(scanned("id,shop,y\n1,\"a\",0\n", {"shop"}).given_up);
}

TEST_CASE("cell scan: gives up where categorical.cpp must report or decide") {
  CHECK(scanned("a,y\n,0\n", {"a"}).given_up);                         // an empty cell
  CHECK_FALSE(scanned("a,y\n,0\nb,1\n", {"a"}, 1, true).given_up);      // allowed: skipped
  CHECK(scanned("a,y\n\xff,0\n", {"a"}).given_up);                      // not UTF-8
  CHECK(scanned(shops(20, 5), {"shop"}, 1, false, 4).given_up);        // over the limit
  CHECK_FALSE(scanned(shops(20, 4), {"shop"}, 1, false, 4).given_up);  // at the limit
  // Three values in each half, six in all: over the limit of 5 only once the halves merge.
  std::string halves = "shop,y\n";
  for (int r = 0; r < 6000; ++r) halves += "s" + std::to_string((r < 3000 ? 0 : 3) + r % 3) + ",1\n";
  CHECK(scanned(halves, {"shop"}, 2, false, 5).given_up);
  CHECK_FALSE(scanned(halves, {"shop"}, 2, false, 6).given_up);
  CHECK(scanned("a,y\nq,0\n", {"nope"}).given_up);                     // not a column
}
