// The fast path of loading hashed CSV rows (core/data/hashed_rows.hpp): on every file it must
// give what the general record parser gives -- the same keys, values and labels in the same
// rows, or the same error -- and it must actually take the plain rows.

#include "core/data/dataset.hpp"
#include "core/data/hashed_csv.hpp"
#include "core/data/hashed_rows.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/random.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;

// A CSV in a temporary folder, written without the fsync of CsvFile (files::write_atomic):
// these tests write a hundred small files, and a sync each took seconds on a busy disk.
struct QuickCsv {
  dt::files::TempDir dir{"dt-test-hashed"};
  std::filesystem::path path;
  QuickCsv(const std::string& content, const std::string& name) : path(dir.path() / name) {
    std::ofstream(path, std::ios::binary) << content;
  }
};

struct Layout {
  std::vector<std::string> hashed;
  std::vector<std::pair<std::string, std::string>> crosses;
  bool no_label = false;  // loaded without its label column (as predict reads a file)
  LabelKind kind = LabelKind::kBinary;
  dt::config::Missing missing = dt::config::Missing::kError;
};

// The outcome of one load: every row's keys, value bits and label, or the error's message.
struct Outcome {
  std::string text;
  std::uint64_t fast_rows = 0;
  std::uint64_t rows = 0;
};

Outcome load(const QuickCsv& file, const Layout& layout, bool fast) {
  dt::config::Config config;
  config.data.path = file.path;
  config.data.format = dt::config::DataFormat::kCsv;
  config.data.missing = layout.missing;
  config.data.label = std::optional<std::string>("y");
  config.data.hash = dt::config::HashConfig{10, layout.hashed, layout.crosses};
  Outcome out;
  try {
    auto source = dt::data::describe_source(config);
    if (layout.no_label) source.label_index = dt::data::kNoLabel;
    std::vector<std::uint64_t> all(source.rows);
    std::iota(all.begin(), all.end(), std::uint64_t{0});
    const auto segments = dt::data::to_segments(all, source.csv);
    dt::data::Shard shard;
    shard.y = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(source.rows));
    shard.sparse.emplace();
    shard.sparse->width = source.sparse->width;
    out.fast_rows = dt::data::load_sparse_csv(file.path, &*source.csv, source, segments, shard,
                                              layout.kind, layout.missing, fast);
    const auto& s = *shard.sparse;
    out.rows = s.rows();
    for (std::size_t r = 0; r < s.rows(); ++r) {
      out.text += fmt::format("row {}:", r);
      for (auto i = s.row_start[r]; i < s.row_start[r + 1]; ++i) {
        out.text += fmt::format(" {}={:016x}", s.keys[i], std::bit_cast<std::uint64_t>(s.values[i]));
      }
      if (layout.kind == LabelKind::kCategorical) {
        if (r < shard.raw_labels.size()) out.text += " label " + shard.raw_labels[r];
      } else if (!layout.no_label) {
        out.text += fmt::format(" label {:016x}", std::bit_cast<std::uint64_t>(shard.y(static_cast<Eigen::Index>(r))));
      }
      out.text += '\n';
    }
  } catch (const dt::DataError& e) {
    out.text = std::string("error: ") + e.what();
  }
  return out;
}

// Loads `content` both ways and checks they agree; returns the fast path's outcome.
Outcome both_ways(const std::string& content, const Layout& layout) {
  const QuickCsv file(content, "h.csv");
  const Outcome general = load(file, layout, false);
  const Outcome fast = load(file, layout, true);
  CAPTURE(content);
  CAPTURE(general.text);
  CHECK(fast.text == general.text);
  CHECK(general.fast_rows == 0);
  return fast;
}

Layout clicks_layout() {
  Layout l;
  l.hashed = {"a", "b", "c"};
  l.crosses = {{"a", "b"}, {"c", "a"}};
  return l;
}

}  // namespace

TEST_CASE("hashed fast path: plain rows take it, with the general parser's keys and labels") {
  // Long enough values that a row spans several 64-byte blocks of the separator scan.
  std::string content = "a,b,n,c,y\n";
  for (int r = 0; r < 50; ++r) {
    content += fmt::format("v{},{},{}.{},w{}{},{}\n", r % 7, std::string(static_cast<std::size_t>(r * 3 + 1), 'x'),
                           r - 20, r, r, std::string(static_cast<std::size_t>(r), 'z'), r % 2);
  }
  const Outcome fast = both_ways(content, clicks_layout());
  CHECK(fast.rows == 50);
  CHECK(fast.fast_rows == 50);
  // The documented key of the first row's first cell is there.
  CHECK(fast.text.find(fmt::format("row 0: ")) == 0);
  CHECK(fast.text.find(fmt::format(" {}=", dt::data::hashed_key("a", "v0", 10))) != std::string::npos);
}

TEST_CASE("hashed fast path: quoted, empty, CRLF and odd rows agree with the general parser") {
  const Layout clicks = clicks_layout();
  // Each file: its content, and how many of its rows the fast path must take.
  const std::vector<std::pair<std::string, std::uint64_t>> files = {
      // quoted fields (with a separator, an escaped quote, a line break): the general path
      {"a,b,n,c,y\nred,big,1,x,1\n\"red\",big,2,x,0\n\"a,b\",\"q\"\"r\",3,\"two\nlines\",1\nred,big,4,x,0\n", 2},
      // a quote inside an unquoted cell is text to the general parser
      {"a,b,n,c,y\nre\"d,big,1,x,1\nred,big,1,x,1\n", 1},
      // CRLF line ends, the last line without one
      {"a,b,n,c,y\r\nred,big,1,x,1\r\nblue,small,-2.5,y,0\r\nred,q,0,z,1", 2},
      // a CR inside a cell (not before the line end) is part of the value
      {"a,b,n,c,y\nre\rd,big,1,x,1\nred,big,1,x\r,1\n", 2},
      // spaces are part of a hashed value; a numeric cell with spaces goes the general way
      {"a,b,n,c,y\n red,big ,1,x,1\nred,big, 2,x,0\nred,big,3 ,x,0\n", 1},
      // numbers the fast parser hands over: exponents, a leading '+', '.5', -0, zero
      {"a,b,n,c,y\nr,s,1e3,t,1\nr,s,+4,t,1\nr,s,.5,t,0\nr,s,-0,t,0\nr,s,0,t,1\nr,s,0.000,t,1\n", 4},
      // a label the fast path leaves to the general one ("1.0" is class 1 there)
      {"a,b,n,c,y\nr,s,1,t,1.0\nr,s,1,t, 0\nr,s,1,t,1\n", 1},
  };
  for (const auto& [content, fast_rows] : files) {
    const Outcome fast = both_ways(content, clicks);
    CAPTURE(content);
    CHECK(fast.text.rfind("error", 0) != 0);
    CHECK(fast.fast_rows == fast_rows);
  }
}

TEST_CASE("hashed fast path: missing cells under each data.missing, and bad cells' errors") {
  Layout layout = clicks_layout();
  const std::vector<std::string> files = {
      "a,b,n,c,y\nred,,1,x,1\n",         // an empty hashed cell (a cross loses its half)
      "a,b,n,c,y\nred,big,,x,1\n",        // an empty numeric cell
      "a,b,n,c,y\nred,big,NA,x,1\n",      // a missing-value marker
      "a,b,n,c,y\nred,big,1,,1\r\n",      // an empty last hashed cell before a CRLF
      "a,b,n,c,y\nred,big,1,x,\n",        // an empty label
      "a,b,n,c,y\nred,big,abc,x,1\n",     // not a number
      "a,b,n,c,y\nred,big,inf,x,1\n",     // not finite
      "a,b,n,c,y\nred,big,1,x,2\n",       // not 0 or 1
      "a,b,n,c,y\nred,big,1,x\n",         // a field short
      "a,b,n,c,y\nred,big,1,x,1,9\n",     // a field too many
      "a,b,n,c,y\nred,big,1,x,1\n\nred,big,1,x,1\n",  // a blank line in the middle
  };
  for (const auto missing : {dt::config::Missing::kError, dt::config::Missing::kZero,
                             dt::config::Missing::kMean}) {
    layout.missing = missing;
    for (const auto& content : files) (void)both_ways(content, layout);
  }
  // The messages are the general parser's (file:line:column), not a generic one.
  const QuickCsv file("a,b,n,c,y\nred,big,1,x,1\nred,,1,x,1\n", "h.csv");
  layout.missing = dt::config::Missing::kError;
  CHECK(load(file, layout, true).text.find("h.csv:3:5: column 'b': missing value (an empty cell)") !=
        std::string::npos);
}

TEST_CASE("hashed fast path: numeric and text labels, no label, one column") {
  Layout layout = clicks_layout();
  layout.kind = LabelKind::kNumeric;
  CHECK(both_ways("a,b,n,c,y\nr,s,1,t,2.5\nr,s,1,t,-3e2\nr,s,1,t, 4\n", layout).fast_rows == 2);
  layout.kind = LabelKind::kCategorical;
  CHECK(both_ways("a,b,n,c,y\nr,s,1,t,cat\nr,s,1,t,dog\r\nr,s,1,t, cat\nr,s,1,t,\"cat\"\n", layout)
            .fast_rows == 2);
  Layout none;
  none.hashed = {"a"};
  none.no_label = true;
  CHECK(both_ways("a,y\nred,1\nblue,0\n\"green\",1\n", none).fast_rows == 2);
  none.hashed = {"a", "b"};
  none.missing = dt::config::Missing::kZero;
  CHECK(both_ways("b;a;y\nred;;1\n;blue;0\nx;y;1\n", none).fast_rows == 3);  // another separator
}

TEST_CASE("hashed fast path: random files of tricky cells agree with the general parser") {
  // Cells drawn from a pool of plain and awkward ones, rows ending in LF or CRLF, the last line
  // with or without its line end; long cells push rows over several 64-byte blocks.
  const std::vector<std::string> hashed_cells = {
      "red", "blue", "", "\"red\"", "\"a,b\"", " sp", "x\"y", "\"\"", std::string(70, 'k'),
      "\"multi\nline\"", "9"};
  const std::vector<std::string> numeric_cells = {"1", "-2.5", "0", "", "1e5", "NA", "3.25",
                                                  "\"4\"", "12345678901234567890", "0.1"};
  const std::vector<std::string> labels = {"0", "1", "1", "0", "\"1\""};
  std::uint64_t fast_total = 0;
  for (std::uint64_t file = 0; file < 60; ++file) {
    std::string content = "a,n,b,c,y\n";
    const auto pick = [&](const std::vector<std::string>& pool, std::uint64_t i, std::uint64_t j) {
      return pool[dt::random::hash(7, file, i, j) % pool.size()];
    };
    const std::uint64_t rows = 1 + dt::random::hash(7, file, 999) % 12;
    for (std::uint64_t r = 0; r < rows; ++r) {
      content += pick(hashed_cells, r, 0) + "," + pick(numeric_cells, r, 1) + "," +
                 pick(hashed_cells, r, 2) + "," + pick(hashed_cells, r, 3) + "," +
                 pick(labels, r, 4);
      const bool last = r + 1 == rows;
      const auto end = dt::random::hash(7, file, r, 5) % 3;
      content += end == 0 ? "\n" : end == 1 ? "\r\n" : last ? "" : "\n";
    }
    Layout layout = clicks_layout();
    layout.missing = file % 2 == 0 ? dt::config::Missing::kZero : dt::config::Missing::kMean;
    fast_total += both_ways(content, layout).fast_rows;
  }
  CHECK(fast_total > 20);  // the fast path did take rows
}

TEST_CASE("hashed rows: sealed as SparseRows::append seals them, repeats and numeric tails too") {
  // append_hashed_row sorts only the hashed keys (value 1) and counts repeats; SparseRows::append
  // stable-sorts everything and adds values in order. Rows of 0 to 300 hashed keys (past the
  // counting sort's 256, into std::sort), few bits so that keys repeat, numeric keys after.
  dt::data::SparseRows want, got;
  std::vector<std::uint32_t> scratch;
  for (std::uint64_t row = 0; row < 400; ++row) {
    const int bits = 1 + static_cast<int>(dt::random::hash(3, row, 0) % 24);
    const std::size_t hashed = row == 399 ? 300 : dt::random::hash(3, row, 1) % 70;
    std::vector<dt::data::KeyValue> entries;
    for (std::size_t i = 0; i < hashed; ++i) {
      const auto key = static_cast<std::uint32_t>(dt::random::hash(3, row, 2, i) >> (64 - bits));
      entries.push_back({key, 1.0});
    }
    const std::uint32_t base = std::uint32_t{1} << bits;
    for (std::uint32_t n = 0; n < 3; ++n) {
      if (dt::random::hash(3, row, 3, n) % 2 == 0) {
        entries.push_back({base + n, dt::random::normal(3, row, 4, n)});
      }
    }
    auto copy = entries;
    want.append(copy);
    dt::data::detail::append_hashed_row(got, entries, hashed, bits, scratch);
  }
  CHECK(got.row_start == want.row_start);
  CHECK(got.keys == want.keys);
  REQUIRE(got.values.size() == want.values.size());
  bool same_bits = true;
  for (std::size_t i = 0; i < got.values.size(); ++i) {
    same_bits = same_bits && std::bit_cast<std::uint64_t>(got.values[i]) ==
                                 std::bit_cast<std::uint64_t>(want.values[i]);
  }
  CHECK(same_bits);
  CHECK(want.nonzeros() > 10000);
  CHECK(*std::max_element(want.values.begin(), want.values.end()) > 1.0);  // keys did repeat
}
