// The fast paths of CSV loading (the one-pass row parser, the 64-byte index scan): they must
// accept exactly what the general reader accepts, with the same bits and the same errors.

#include "core/data/csv.hpp"
#include "core/data/csv_io.hpp"
#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;
using dt::test::CsvFile;
using dt::test::data_error;

dt::data::Shard load_all(const CsvFile& file, LabelKind kind,
                         dt::config::Missing missing = dt::config::Missing::kError) {
  dt::config::Config config;
  config.data.path = file.path;
  config.data.missing = missing;
  config.data.label = std::optional<std::string>("y");
  const auto source = dt::data::describe_source(config);
  std::vector<std::uint64_t> rows(source.rows);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  return dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv), kind);
}

// What the general path makes of one cell: its value's bits, or its error message. A feature
// cell may be missing (data.missing), a label cell never.
std::string reference(const std::string& cell, const std::filesystem::path& path,
                      std::uint64_t line, std::uint64_t column, const std::string& name,
                      dt::config::Missing missing) {
  try {
    const double v =
        name == "y" ? dt::data::detail::parse_label(cell, line, column, path, name)
                    : dt::data::detail::parse_feature(cell, line, column, path, name, missing);
    return fmt::format("bits {:016x}", std::bit_cast<std::uint64_t>(v));
  } catch (const dt::DataError& e) {
    return e.what();
  }
}

std::string outcome(const CsvFile& file, Eigen::Index col, dt::config::Missing missing) {
  try {
    const auto shard = load_all(file, LabelKind::kNumeric, missing);
    const double v = col < shard.x.cols() ? shard.x(0, col) : shard.y(0);
    return fmt::format("bits {:016x}", std::bit_cast<std::uint64_t>(v));
  } catch (const dt::DataError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("csv fast path: every cell gives the general path's bits or its error") {
  const std::vector<std::string> cells = {
      "0.1", "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9e-324", "5e-324",
      "2.4703282292062327e-324", "1e-400", "-1e-400", "1e400", "-1e400",
      "1.7976931348623157e308", "1.7976931348623159e308", "9007199254740993",
      "123456789012345678901234567890", "0.30000000000000004", "-0", "007", "1.", ".5", "-.5",
      "+1", "+.5", "1e", "1e+", "1e5x", "1.e5", "1E5", "0x10", "--1", "-", ".", "e5", "1.2.3",
      "nan", "-inf", "inf", "1_0", " 1", "1 ", "\t2", "1\r", "\"3.5\"", "", "1e-5", "-12.5e+3",
      // missing-value markers (data.missing), two of them starting like a number
      "NA", "?", " N/A ", "null", "1.#IND", "-1.#QNAN", "-nan"};
  using dt::config::Missing;
  for (const auto& cell : cells) {
    for (const bool crlf : {false, true}) {
      const char* eol = crlf ? "\r\n" : "\n";
      // The cell as a middle column and as the last (label) column.
      const CsvFile mid(fmt::format("a,b,y{}1,{},3{}", eol, cell, eol));
      const CsvFile last(fmt::format("a,b,y{}1,2,{}{}", eol, cell, eol));
      CAPTURE(cell);
      CAPTURE(crlf);
      const std::string text = cell.find('"') == std::string::npos ? cell : "3.5";
      const auto expected = reference(text, mid.path, 2, 3, "b", Missing::kError);
      CHECK(outcome(mid, 1, Missing::kError) == expected);
      // A feature cell that is not a number may be a missing one: data.missing zero reads it
      // as 0 (mean as NaN, the same path) on both paths, or gives the same error.
      if (expected.rfind("bits", 0) != 0) {
        CHECK(outcome(mid, 1, Missing::kZero) ==
              reference(text, mid.path, 2, 3, "b", Missing::kZero));
      }
      // (With LF ends, "1\r" in the last column is "1" and a CRLF.) Labels are never missing.
      if (cell.find('"') == std::string::npos && !(!crlf && cell == "1\r")) {
        CHECK(outcome(last, 2, Missing::kZero) ==
              reference(cell, last.path, 2, 5, "y", Missing::kZero));
      }
    }
  }
}

TEST_CASE("csv fast path: a bad number at the end of the last column names that column") {
  const CsvFile lf("a,b,y\n1,2,3\n4,5,6x\n");
  CHECK(data_error([&] { (void)load_all(lf, LabelKind::kNumeric); }) ==
        lf.at(":3:5: column 'y': '6x' is not a number"));
  const CsvFile crlf("a,b,y\r\n1,2,3\r\n4,5,6e\r\n");
  CHECK(data_error([&] { (void)load_all(crlf, LabelKind::kNumeric); }) ==
        crlf.at(":3:5: column 'y': '6e' is not a number"));
  const CsvFile no_newline("a,b,y\n1,2,3\n4,5,6.5.\n");
  CHECK(data_error([&] { (void)load_all(no_newline, LabelKind::kNumeric); }) ==
        no_newline.at(":3:5: column 'y': '6.5.' is not a number"));
  const CsvFile two_cr("a,b,y\r\n1,2,3\r\r\n");
  CHECK(data_error([&] { (void)load_all(two_cr, LabelKind::kNumeric); }) ==
        two_cr.at(":2:5: column 'y': '3\\x0d' is not a number"));
}

TEST_CASE("csv fast path: rows across buffer refills, CRLF at every edge, exact round trips") {
  // Rows of varied length (shortest round-trip doubles of every size) so that row ends, numbers
  // and CRLF pairs land on both sides of the reader's buffer end and the index's 64-byte chunks.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const int cols = 7;
  const int rows = 30000;
  std::vector<double> want;
  std::string text = "a,b,c,d,e,f,y\r\n";
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double v = unit(rng) * std::pow(10.0, static_cast<int>(rng() % 40) - 20);
      if ((r + c) % 97 == 0) v = 2.2250738585072011e-308;
      if ((r + c) % 89 == 0) v = 0.1;
      if ((r + c) % 83 == 0) v = 4.9e-324;
      want.push_back(v);
      text += fmt::format("{}{}", v, c + 1 < cols ? "," : (r % 3 == 0 ? "\n" : "\r\n"));
    }
  }
  const CsvFile f(text);
  const auto shard = load_all(f, LabelKind::kNumeric);
  REQUIRE(shard.x.rows() == rows);
  std::size_t mismatches = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const double got = c + 1 < cols ? shard.x(r, c) : shard.y(r);
      const double expected = want[static_cast<std::size_t>(r * cols + c)];
      mismatches += std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(expected) ? 0 : 1;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("csv fast path: a row longer than the reader's buffer") {
  const int cols = 30000;  // about 600 KB a row, more than the 256 KiB buffer
  std::string header;
  for (int c = 0; c < cols; ++c) header += fmt::format("x{},", c);
  header += "y\n";
  std::string text = header;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < cols; ++c) text += fmt::format("{}.0123456789012345,", r * cols + c);
    text += fmt::format("{}\n", r);
  }
  const CsvFile f(text);
  const auto shard = load_all(f, LabelKind::kNumeric);
  REQUIRE(shard.x.rows() == 3);
  CHECK(shard.x(2, cols - 1) == std::stod(fmt::format("{}.0123456789012345", 3 * cols - 1)));
  CHECK(shard.x(1, 0) == std::stod(fmt::format("{}.0123456789012345", cols)));
  CHECK(shard.y == Eigen::VectorXd{{0.0, 1.0, 2.0}});
}

TEST_CASE("csv fast path: quoted cells and spaces go the general way in the middle of plain rows") {
  const CsvFile f("a,b,y\n1,2,3\n\"4\", 5 ,6\n7,8,9\r\n\"10\" ,11,\t12\n13,14,15");
  const auto shard = load_all(f, LabelKind::kNumeric);
  dt::data::RowMatrix x(5, 2);
  x << 1, 2, 4, 5, 7, 8, 10, 11, 13, 14;
  CHECK(shard.x == x);
  CHECK(shard.y == Eigen::VectorXd{{3, 6, 9, 12, 15}});
}

TEST_CASE("csv fast path: binary and text labels, and columns that are skipped") {
  const CsvFile binary("a,y\n1,0\n2,1\n3,1.0\n4,-0\n5,1\r\n");
  CHECK(load_all(binary, LabelKind::kBinary).y == Eigen::VectorXd{{0, 1, 1, 0, 1}});
  const CsvFile bad("a,y\n1,0\n2,2\n");
  CHECK(data_error([&] { (void)load_all(bad, LabelKind::kBinary); }) ==
        bad.at(":3:3: label 'y': 2 is not 0 or 1; logistic_regression and binary mlp need 0/1 "
               "labels (use softmax_regression for more classes)"));

  const CsvFile text("a,y\n1,cat\n2,dog\r\n3,New York\n4, cat \n5,\"a,b\"\n6,caf\xC3\xA9\n");
  const auto shard = load_all(text, LabelKind::kCategorical);
  CHECK(shard.raw_labels ==
        std::vector<std::string>{"cat", "dog", "New York", "cat", "a,b", "caf\xC3\xA9"});
  const CsvFile latin1("a,y\n1,cat\n2,caf\xE9\n");
  CHECK(data_error([&] { (void)load_all(latin1, LabelKind::kCategorical); }) ==
        latin1.at(":3:3: label 'y': the class name is not valid UTF-8; save the file as UTF-8"));

  // Predict reads a model's features from a file with more columns: the others are skipped,
  // whatever text they hold.
  const CsvFile extra("id,a,note,b\nr1,1,hello world,2\r\nr2,3,\"x,y\",4\n");
  dt::config::Config config;
  config.data.path = extra.path;
  auto source = dt::data::describe_source(config);
  source.features = {"b", "a"};
  source.label_index = dt::data::kNoLabel;
  const auto read = dt::data::load_shard(config, source, dt::data::to_segments({0, 1}, source.csv),
                                         LabelKind::kNumeric);
  dt::data::RowMatrix x(2, 2);
  x << 2, 1, 4, 3;
  CHECK(read.x == x);
}

TEST_CASE("csv index: the SSE2 and portable byte masks agree, and quotes mid-chunk") {
  std::mt19937_64 rng(9);
  const char alphabet[] = {'\n', ',', '"', 'a', '1', '\r', '\0', '\xff'};
  bool same = true;
  for (int trial = 0; trial < 2000; ++trial) {
    char bytes[64];
    for (char& b : bytes) b = alphabet[rng() % sizeof(alphabet)];
    const auto a = dt::data::detail::byte_masks(bytes);
    const auto b = dt::data::detail::byte_masks_portable(bytes);
    same = same && a.newline == b.newline && a.comma == b.comma && a.quote == b.quote;
    const std::uint64_t word = rng();
    same = same && dt::data::detail::bit_count(word) == std::popcount(word);
  }
  CHECK(same);

  // Plain rows, then a quoted row that starts in the middle of a 64-byte chunk, then plain rows:
  // every row start matches a sequential read.
  std::string text = "p,q\n";
  for (int i = 0; i < 50; ++i) text += fmt::format("{},{}\n", i, i * i);
  text += "\"x\ny\",1\n";
  for (int i = 0; i < 50; ++i) text += fmt::format("{},{}\r\n", i, i);
  text += "a,\"b\"\"c\"\n1,2";
  const CsvFile f(text);
  const auto index = dt::data::index_csv(f.path);
  REQUIRE(index.rows() == 103);
  CHECK(index.row_line[50] == 52);
  CHECK(index.row_line[51] == 54);
  CHECK(index.row_offset[51] == text.find("0,0\r\n"));
  CHECK(index.row_offset[102] == text.size() - 3);
  const CsvFile ragged("p,q\n1,2\n3,4,5\n");
  CHECK(data_error([&] { (void)dt::data::index_csv(ragged.path); }) ==
        ragged.at(":3:1: row has 3 fields, the header has 2"));
}

TEST_CASE("csv fast path: the 32-byte digit scan gives the general path's bits") {
  // The scan reads up to 40 bytes from a cell, so every cell here is followed by a long row;
  // the cells in the first test above are too near the end of their file to reach it.
  std::vector<std::string> cells = {
      "0", "-0", "-0.0", "1.", "-1.", "7", "12345678", "123456789", "12345678.5", "123456789.5",
      "0.0000000000000000001", "00000000.00000000001", "1234567890123456789",
      "9999999999999999999", "12345678901234567890", "1.234567890123456789",
      "0.12345678901234567890", "9007199254740993", "9007199254740992.5", "0.30000000000000004",
      "-0.7447578671036936", "0.048610413161816565", "-1.5913096293276847", "1e5", "1.5E-3",
      "2.2250738585072011e-308", "4.9e-324", "1.0000000000000002", "0.9999999999999999",
      "123.456", "1.", "3.14159265358979323846", "00000000000000000000000001"};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 4000; ++i) {  // shortest round trips of doubles of every size and length
    const double v = std::uniform_real_distribution<double>(-1.0, 1.0)(rng) *
                     std::pow(10.0, static_cast<int>(rng() % 24) - 8);
    cells.push_back(fmt::format("{}", v));
    cells.push_back(fmt::format("{:.{}f}", v, static_cast<int>(rng() % 19)));
  }
  std::string text = "a,b,y\n";
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    text += fmt::format("{},1,{}\n", cells[i], i);
    expected.push_back(reference(cells[i], "", 0, 0, "a", dt::config::Missing::kError));
  }
  for (int i = 0; i < 8; ++i) text += "0.125,0.25,0.5\n";  // the last cells also have a reach
  const CsvFile f(text);
  const auto shard = load_all(f, LabelKind::kNumeric);
  REQUIRE(static_cast<std::size_t>(shard.x.rows()) == cells.size() + 8);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    CAPTURE(cells[i]);
    CHECK(fmt::format("bits {:016x}", std::bit_cast<std::uint64_t>(shard.x(
              static_cast<Eigen::Index>(i), 0))) == expected[i]);
  }
}

TEST_CASE("csv reading: a file that shrinks while it is read ends there, without a crash") {
  // The mapped reader populates each window before it reads it, so a file cut short under it
  // ends the data, as a short pread would, instead of raising SIGBUS on the lost pages.
  std::string text = "a,y\n";
  for (int r = 0; r < 200000; ++r) text += fmt::format("{}.5,{}\n", r, r % 7);  // about 2 MB
  const CsvFile f(text);
  dt::data::detail::RecordReader reader(f.path, 0, 1);
  std::vector<dt::data::detail::FieldView> fields;
  REQUIRE(reader.next_views(fields));  // the header: the first 1 MiB window is in
  // Cut after the row that ends first past 1.2 MB: inside the reader's second window.
  const std::size_t cut = text.find('\n', 1200000) + 1;
  std::filesystem::resize_file(f.path, cut);
  std::uint64_t rows = 0;
  std::string last;
  while (reader.next_views(fields)) {
    ++rows;
    last = std::string(fields.front().text());
  }
  const auto kept = static_cast<std::uint64_t>(
      std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(cut), '\n') - 1);
  CHECK(rows == kept);
  CHECK(last == fmt::format("{}.5", kept - 1));
}
