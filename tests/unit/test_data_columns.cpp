// Separators (detected or forced) and column selection (data.features / data.exclude).

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using dt::data::CsvField;
using dt::data::CsvReader;
using dt::data::detect_delimiter;
using dt::data::index_csv;
using dt::data::select_features;
using dt::test::CsvFile;
using dt::test::data_error;

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("delimiter: detected from the header and the first data line") {
  CHECK(detect_delimiter(CsvFile("a;b;c\n1;2;3\n").path) == ';');
  CHECK(detect_delimiter(CsvFile("a\tb\tc\n1\t2\t3\n").path) == '\t');
  CHECK(detect_delimiter(CsvFile("a|b\n1|2\n").path) == '|');
  CHECK(detect_delimiter(CsvFile("a,b,c\n1,2,3\n").path) == ',');
  // Separators inside quotes do not count; the most fields wins.
  CHECK(detect_delimiter(CsvFile("\"a;b;c\",d\n1,2\n").path) == ',');
  CHECK(detect_delimiter(CsvFile("a;b,c;d\n1;2,3;4\n").path) == ';');
  // The first data line must split as the header does: "x;y" in a comma file's header only.
  CHECK(detect_delimiter(CsvFile("p;q;r,s\n1,2\n").path) == ',');
  CHECK(detect_delimiter(CsvFile("only\n1\n").path) == ',');
  // A .tsv name is tab whatever the header holds.
  CHECK(detect_delimiter(CsvFile("a,b\n1,2\n", "data.tsv").path) == '\t');
}

TEST_CASE("delimiter: semicolon and tab files index and read like comma files") {
  const CsvFile semi("id;note;y\n1;\"a; b\";2\n3;\"x\"\"y\";4\n");
  const auto index = index_csv(semi.path);
  CHECK(index.delimiter == ';');
  CHECK(index.columns == Names{"id", "note", "y"});
  REQUIRE(index.rows() == 2);
  CsvReader reader(semi.path, index.row_offset[0], index.row_line[0], ';');
  std::vector<CsvField> fields;
  REQUIRE(reader.next(fields));
  CHECK(fields[1].text == "a; b");
  REQUIRE(reader.next(fields));
  CHECK(fields[1].text == "x\"y");

  // A tab after a closing quote is the separator, not a space to skip.
  const CsvFile tabs("a\tb\tc\n\"p q\"\t-1\t\"r\"\n", "t.tsv");
  const auto tab_index = index_csv(tabs.path);
  CHECK(tab_index.delimiter == '\t');
  CsvReader tab_reader(tabs.path, tab_index.row_offset[0], tab_index.row_line[0], '\t');
  REQUIRE(tab_reader.next(fields));
  REQUIRE(fields.size() == 3);
  CHECK(fields[0].text == "p q");
  CHECK(fields[1].text == "-1");
  CHECK(fields[2].text == "r");

  // The two-halves index gives the one-pass result with any separator.
  std::string text = "a;b;c\n";
  for (int i = 0; i < 3000; ++i) text += std::to_string(i) + ";\"t;" + std::to_string(i) + "\";1\n";
  const CsvFile big(text);
  const auto one = index_csv(big.path, 1);
  const auto two = index_csv(big.path, 2, 1024);
  CHECK(one.rows() == 3000);
  CHECK(one.row_offset == two.row_offset);
  CHECK(one.row_line == two.row_line);
}

TEST_CASE("delimiter: a forced one the header does not use names the one it seems to use") {
  const CsvFile semi("a;b;c\n1;2;3\n");
  CHECK(data_error([&] { (void)index_csv(semi.path, 1, 1 << 20, ','); }) ==
        semi.at(":1: data.delimiter is comma, but the header has no comma: it seems to use "
                "semicolon (3 fields); set data.delimiter: semicolon (or auto, which detects it)"));
  CHECK(index_csv(semi.path, 1, 1 << 20, ';').columns == Names{"a", "b", "c"});
  // A one-column file has nothing to compare with: the forced separator is taken.
  CHECK(index_csv(CsvFile("y\n1\n").path, 1, 1 << 20, ';').columns == Names{"y"});
}

TEST_CASE("columns: features and exclude by name, name range and number range") {
  const Names cols{"id", "x0", "x1", "name", "x2", "y"};
  CHECK(select_features(cols, 5, {}, {}, "f") == Names{"id", "x0", "x1", "name", "x2"});
  CHECK(select_features(cols, 5, {}, {"id", "name"}, "f") == Names{"x0", "x1", "x2"});
  CHECK(select_features(cols, 5, {"x2", "x0"}, {}, "f") == Names{"x0", "x2"});  // file order
  CHECK(select_features(cols, 5, {"x0:x2"}, {"name"}, "f") == Names{"x0", "x1", "x2"});
  CHECK(select_features(cols, 5, {"2:3", "5:5"}, {}, "f") == Names{"x0", "x1", "x2"});
  CHECK(select_features(cols, 1, {"x1:y"}, {}, "f") == Names{"x1", "name", "x2", "y"});
  CHECK(select_features(cols, 3, {"x1:x2"}, {}, "f") == Names{"x1", "x2"});  // spans the label
  // A column whose name has a colon is found by its name first.
  CHECK(select_features({"a:b", "c", "y"}, 2, {"a:b"}, {}, "f") == Names{"a:b"});
}

TEST_CASE("columns: unknown names and bad ranges") {
  const Names cols{"id", "x0", "x1", "y"};
  CHECK(data_error([&] { (void)select_features(cols, 3, {}, {"idd"}, "f.csv"); }) ==
        "f.csv: data.exclude: no column 'idd' (did you mean 'id'?); columns are: id, x0, x1, y");
  CHECK(data_error([&] { (void)select_features(cols, 3, {"x0:x5"}, {}, "f.csv"); })
            .starts_with("f.csv: data.features: range 'x0:x5': no column 'x5' (did you mean"));
  CHECK(data_error([&] { (void)select_features(cols, 3, {"0:2"}, {}, "f.csv"); }) ==
        "f.csv: data.features: range '0:2' needs column numbers 1 <= first <= last <= 4 (the "
        "file has 4 columns)");
  CHECK(data_error([&] { (void)select_features(cols, 3, {"x1:x0"}, {}, "f.csv"); }) ==
        "f.csv: data.features: range 'x1:x0' runs backwards ('x1' is column 3, 'x0' column 2); "
        "write it as x0:x1");
  CHECK(data_error([&] { (void)select_features(cols, 3, {"y"}, {}, "f.csv"); })
            .find("'y' is the label column") != std::string::npos);
  CHECK(data_error([&] { (void)select_features(cols, 3, {}, {"id:x1"}, "f.csv"); })
            .starts_with("f.csv: no feature columns are left"));
}
