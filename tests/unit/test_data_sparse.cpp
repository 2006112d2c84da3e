// Sparse rows (CSR): SparseRows itself, the documented feature hash, LIBSVM and hashed CSV rows
// loaded sparse (keys sorted and unique, collisions summed, crosses, numeric columns), a
// worker's segments loading exactly its rows, and bad input refused with where and what to do.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/data/hashed_csv.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/hash.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;
using dt::data::SparseRows;

std::filesystem::path sparse_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The message of the dt::Error `f` throws (and that it is bad input: exit 2), or "(no error)".
template <class F>
std::string sparse_refusal(F&& f) {
  try {
    f();
  } catch (const dt::Error& e) {
    CHECK(e.exit_code() == dt::ExitCode::kBadInput);
    return e.what();
  }
  return "(no error)";
}

// CsrRow r of `rows` as (key, value) pairs.
std::vector<std::pair<std::uint32_t, double>> csr_row(const SparseRows& rows, std::size_t r) {
  std::vector<std::pair<std::uint32_t, double>> out;
  for (auto i = rows.row_start[r]; i < rows.row_start[r + 1]; ++i) {
    out.emplace_back(rows.keys[i], rows.values[i]);
  }
  return out;
}

using CsrRow = std::vector<std::pair<std::uint32_t, double>>;

dt::config::Config hashed_csv_config(const std::filesystem::path& path, int bits,
                              std::vector<std::string> columns) {
  dt::config::Config config;
  config.data.path = path;
  config.data.format = dt::config::DataFormat::kCsv;
  config.data.hash = dt::config::HashConfig{bits, std::move(columns), {}};
  return config;
}

dt::data::Shard load_every_row(const dt::config::Config& config, const dt::data::SourceInfo& source,
                         LabelKind kind) {
  std::vector<std::uint64_t> all(source.rows);
  for (std::uint64_t i = 0; i < source.rows; ++i) all[i] = i;
  return dt::data::load_shard(config, source, dt::data::to_segments(all, source.csv), kind);
}

}  // namespace

TEST_CASE("sparse rows: a row's keys are sorted, repeats summed in order, 12 bytes a nonzero") {
  SparseRows rows;
  rows.width = 10;
  std::vector<dt::data::KeyValue> entries{{7, 1.0}, {2, 0.5}, {7, 2.0}, {0, -1.0}, {2, 0.25}};
  rows.append(entries);
  entries.clear();
  rows.append(entries);  // an empty row
  const dt::data::KeyValue sorted[] = {{1, 3.0}, {9, 4.0}};
  rows.append_sorted(sorted, 2);
  CHECK(rows.rows() == 3);
  CHECK(rows.nonzeros() == 5);
  CHECK(csr_row(rows, 0) == CsrRow{{0, -1.0}, {2, 0.75}, {7, 3.0}});
  CHECK(csr_row(rows, 1).empty());
  CHECK(csr_row(rows, 2) == CsrRow{{1, 3.0}, {9, 4.0}});
  rows.shrink();
  CHECK(rows.memory_bytes() == 4 * 8 + 5 * 12);
  SparseRows more;
  more.append_rows(rows);
  more.append_rows(rows);
  CHECK(more.rows() == 6);
  CHECK(csr_row(more, 5) == CsrRow{{1, 3.0}, {9, 4.0}});
}

TEST_CASE("sparse rows: the documented hash of a value and of a cross") {
  // docs/sparse-data.md: key = fnv1a64("C1=68fd1e64") >> (64 - bits); a cross hashes
  // "C1=68fd1e64" 0x1F "C2=80e26c9b". The numbers were computed by the Python in the docs.
  CHECK(dt::data::hashed_key("C1", "68fd1e64", 22) == 4066997);
  CHECK(dt::data::hashed_key("C1", "68fd1e64", 30) == 1041151450);
  CHECK(dt::data::hashed_key("color", "red", 22) == 402311);
  CHECK(dt::data::crossed_key("C1", "68fd1e64", "C2", "80e26c9b", 22) == 1629792);
  CHECK(dt::data::crossed_key("C1", "68fd1e64", "C2", "80e26c9b", 24) == 6519171);
  CHECK(dt::data::hashed_key("C1", "68fd1e64", 4) == 15);
  CHECK(dt::data::hashed_key("C1", "68fd1e64", 22) ==
        dt::hash::fnv1a64("C1=68fd1e64") >> (64 - 22));
}

TEST_CASE("sparse rows: LIBSVM rows in CSR, and a worker's segments load exactly its rows") {
  const dt::files::TempDir dir("dt-test-sparse");
  const auto path = sparse_file(dir.path() / "a.svm",
                               "1 1:0.5 4:2 9:1\n"
                               "# a comment line\n"
                               "0 2:-1 3:0\n"
                               "1 9:3\n"
                               "0\n");
  dt::config::Config config;
  config.data.path = path;
  config.data.format = dt::config::DataFormat::kLibsvm;
  config.data.sparse = dt::config::SparseChoice::kOn;
  const auto source = dt::data::describe_source(config);
  REQUIRE(source.sparse);
  CHECK(source.sparse->width == 9);  // 1-based indices 1..9: keys 0..8
  CHECK(source.sparse->index_base == 1);
  CHECK(source.features.empty());
  const auto shard = load_every_row(config, source, LabelKind::kBinary);
  CHECK(shard.x.cols() == 0);
  CHECK(shard.x.rows() == 4);
  REQUIRE(shard.sparse);
  const auto& rows = *shard.sparse;
  CHECK(rows.width == 9);
  CHECK(rows.rows() == 4);
  CHECK(csr_row(rows, 0) == CsrRow{{0, 0.5}, {3, 2.0}, {8, 1.0}});
  CHECK(csr_row(rows, 1) == CsrRow{{1, -1.0}});  // the explicit zero is no nonzero
  CHECK(csr_row(rows, 2) == CsrRow{{8, 3.0}});
  CHECK(csr_row(rows, 3).empty());
  CHECK(shard.y(0) == 1.0);
  CHECK(shard.y(3) == 0.0);
  CHECK(rows.memory_bytes() == 5 * 8 + 5 * 12);

  // A worker: segments with byte offsets, no index; rows 1 and 3 only (not rows 0 and 2).
  auto worker = source;
  const auto segments = dt::data::to_segments({1, 3}, source.csv);
  worker.csv.reset();
  const auto mine = dt::data::load_shard(config, worker, segments, LabelKind::kBinary);
  REQUIRE(mine.sparse);
  CHECK(mine.sparse->rows() == 2);
  CHECK(csr_row(*mine.sparse, 0) == CsrRow{{1, -1.0}});
  CHECK(csr_row(*mine.sparse, 1).empty());

  // auto: dense while it fits data.max_dense_gib, sparse past it; false: the old refusal.
  config.data.sparse = dt::config::SparseChoice::kAuto;
  CHECK_FALSE(dt::data::describe_source(config).sparse);
  config.data.max_dense_gib = 1e-9;
  CHECK(dt::data::describe_source(config).sparse);
  config.data.sparse = dt::config::SparseChoice::kOff;
  CHECK(sparse_refusal([&] { (void)dt::data::describe_source(config); })
            .find("more than data.max_dense_gib (1e-09); set data.sparse: auto (or true)") !=
        std::string::npos);
  config.data.sparse = dt::config::SparseChoice::kOn;
  config.data.index_base = 0;  // forced 0-based: key = index, width = 10
  CHECK(dt::data::describe_source(config).sparse->width == 10);
  config.data.features = {"f1"};
  CHECK(sparse_refusal([&] { (void)dt::data::describe_source(config); })
            .find("a.svm: data.features and data.exclude select dense columns; sparse LIBSVM "
                  "rows keep every index: remove them") != std::string::npos);
}

TEST_CASE("sparse rows: hashed CSV columns, crosses, numeric columns after the buckets") {
  const dt::files::TempDir dir("dt-test-sparse");
  const auto path = sparse_file(dir.path() / "c.csv",
                               "C1,n,C2,click\n"
                               "red,2.5,big,1\n"
                               "blue,0,big,0\n"
                               "\"red\",-1,small,1\n");
  auto config = hashed_csv_config(path, 20, {"C1", "C2"});
  config.data.hash->crosses = {{"C1", "C2"}};
  const auto source = dt::data::describe_source(config);
  REQUIRE(source.sparse);
  CHECK(source.sparse->width == (1u << 20) + 1);
  CHECK(source.sparse->numeric == std::vector<std::string>{"n"});
  CHECK(source.features.empty());
  const auto shard = load_every_row(config, source, LabelKind::kBinary);
  REQUIRE(shard.sparse);
  const auto key = [](const char* c, const char* v) { return dt::data::hashed_key(c, v, 20); };
  const auto cross = [](const char* x, const char* y) {
    return dt::data::crossed_key("C1", x, "C2", y, 20);
  };
  const auto expect = [](CsrRow row) {  // sorted by key, as the CSR keeps them
    std::sort(row.begin(), row.end());
    return row;
  };
  const std::uint32_t numeric = 1u << 20;
  CHECK(csr_row(*shard.sparse, 0) ==
        expect({{key("C1", "red"), 1.0}, {key("C2", "big"), 1.0}, {cross("red", "big"), 1.0},
                {numeric, 2.5}}));
  CHECK(csr_row(*shard.sparse, 1) ==  // n = 0: no key
        expect({{key("C1", "blue"), 1.0}, {key("C2", "big"), 1.0}, {cross("blue", "big"), 1.0}}));
  CHECK(csr_row(*shard.sparse, 2) ==  // a quoted cell hashes its text, without the quotes
        expect({{key("C1", "red"), 1.0}, {key("C2", "small"), 1.0}, {cross("red", "small"), 1.0},
                {numeric, -1.0}}));
  CHECK(shard.y(0) == 1.0);
  CHECK(shard.y(1) == 0.0);

  // One bit: two buckets for three keys a row, so keys collide and their values add up.
  auto narrow = hashed_csv_config(path, 1, {"C1", "C2"});
  narrow.data.hash->crosses = {{"C1", "C2"}};
  narrow.data.exclude = {"n"};
  const auto one_bit = load_every_row(narrow, dt::data::describe_source(narrow), LabelKind::kBinary);
  for (std::size_t r = 0; r < 3; ++r) {
    const auto row = csr_row(*one_bit.sparse, r);
    REQUIRE(!row.empty());
    CHECK(row.size() <= 2);
    double sum = 0.0;
    for (std::size_t i = 0; i < row.size(); ++i) {
      CHECK(row[i].first < 2);
      if (i > 0) CHECK(row[i - 1].first < row[i].first);  // sorted, unique
      sum += row[i].second;
    }
    CHECK(sum == 3.0);
  }
}

TEST_CASE("sparse rows: a numeric CSV read sparse (data.sparse: true, no data.hash)") {
  const dt::files::TempDir dir("dt-test-sparse");
  const auto path = sparse_file(dir.path() / "n.csv", "a,b,y\n0,3,1.5\n2,0,2\n");
  dt::config::Config config;
  config.data.path = path;
  config.data.format = dt::config::DataFormat::kCsv;
  config.data.sparse = dt::config::SparseChoice::kOn;
  const auto source = dt::data::describe_source(config);
  REQUIRE(source.sparse);
  CHECK(source.sparse->width == 2);
  const auto shard = load_every_row(config, source, LabelKind::kNumeric);
  CHECK(csr_row(*shard.sparse, 0) == CsrRow{{1, 3.0}});
  CHECK(csr_row(*shard.sparse, 1) == CsrRow{{0, 2.0}});
  CHECK(shard.y(1) == 2.0);
}

TEST_CASE("sparse rows: bad hashed input is refused with where and what to do") {
  const dt::files::TempDir dir("dt-test-sparse");
  const auto path = sparse_file(dir.path() / "h.csv", "C1,C2,click\nred,,1\n");
  auto config = hashed_csv_config(path, 8, {"C1", "C3"});
  CHECK(sparse_refusal([&] { (void)dt::data::describe_source(config); })
            .find("h.csv: data.hash.columns: no column 'C3' (did you mean 'C1'?); columns are: "
                  "C1, C2, click") != std::string::npos);
  config = hashed_csv_config(path, 8, {"C1", "click"});
  CHECK(sparse_refusal([&] { (void)dt::data::describe_source(config); })
            .find("h.csv: data.hash.columns: 'click' is the label column; a label cannot be a "
                  "feature: remove it from data.hash.columns") != std::string::npos);
  config = hashed_csv_config(path, 8, {"C1"});
  config.data.hash->crosses = {{"C1", "C2"}};
  CHECK(sparse_refusal([&] { (void)dt::data::describe_source(config); })
            .find("data.hash.crosses: column 'C2' is not in data.hash.columns; a cross pairs "
                  "two hashed columns: add it to data.hash.columns") != std::string::npos);
  // An empty hashed cell: refused under data.missing: error, no key under zero.
  config = hashed_csv_config(path, 8, {"C1", "C2"});
  const auto source = dt::data::describe_source(config);
  CHECK(sparse_refusal([&] { (void)load_every_row(config, source, LabelKind::kBinary); })
            .find("h.csv:2:5: column 'C2': missing value (an empty cell); fill it in the file, "
                  "or set data.missing: mean or zero") != std::string::npos);
  config.data.missing = dt::config::Missing::kZero;
  const auto shard = load_every_row(config, source, LabelKind::kBinary);
  CHECK(csr_row(*shard.sparse, 0) == CsrRow{{dt::data::hashed_key("C1", "red", 8), 1.0}});
  // A label that is not 0/1 for logistic regression: the cell, as for dense data.
  sparse_file(path, "C1,click\nred,2\n");
  config = hashed_csv_config(path, 8, {"C1"});
  const auto two = dt::data::describe_source(config);
  CHECK(sparse_refusal([&] { (void)load_every_row(config, two, LabelKind::kBinary); })
            .find("h.csv:2:5: label 'click': 2 is not 0 or 1") != std::string::npos);
}

TEST_CASE("sparse rows: data.hash and data.sparse in the config") {
  using dt::config::parse;
  const auto c = parse("version: 1\ndata: {path: a.csv, hash: {bits: 22, columns: [C1, C2], "
                       "crosses: [[C1, C2]]}}\n", "a.yaml", "/tmp");
  REQUIRE(c.data.hash);
  CHECK(c.data.hash->bits == 22);
  CHECK(c.data.hash->columns == std::vector<std::string>{"C1", "C2"});
  REQUIRE(c.data.hash->crosses.size() == 1);
  CHECK(c.data.hash->crosses[0].second == "C2");
  const auto again = parse(dt::config::to_yaml(c), "resolved.yaml", "/");
  REQUIRE(again.data.hash);
  CHECK(again.data.hash->crosses == c.data.hash->crosses);
  CHECK(parse("version: 1\ndata: {path: a.svm, sparse: true}\n", "a.yaml", "/tmp").data.sparse ==
        dt::config::SparseChoice::kOn);
  const auto refused = [](const std::string& text) {
    return sparse_refusal([&] { (void)parse(text, "a.yaml", "/tmp"); });
  };
  CHECK(refused("version: 1\ndata: {path: a.csv, hash: {bits: 31, columns: [C1]}}\n")
            .find("data.hash.bits") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, hash: {bits: 0, columns: [C1]}}\n")
            .find("data.hash.bits") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, hash: {columns: [C1]}}\n")
            .find("missing required key 'data.hash.bits' (the number of hash bits, 1 to 30") !=
        std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, hash: {bits: 4, columns: [C1, C1]}}\n")
            .find("column 'C1' is listed twice") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, hash: {bits: 4, columns: [C1], crosses: [[C1]]}}\n")
            .find("a cross is two different columns") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, sparse: false, hash: {bits: 4, columns: [C1]}}\n")
            .find("data.hash: makes sparse rows, but data.sparse is false; remove data.sparse: "
                  "false") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.svm, format: libsvm, hash: {bits: 4, columns: [C1]}}\n")
            .find("remove data.hash") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.csv, sparse: maybe}\n")
            .find("data.sparse: expected auto, true or false, got 'maybe'") != std::string::npos);
  CHECK(refused("version: 1\ndata: {synthetic: {kind: linear}, sparse: true}\n")
            .find("data.sparse: applies to data.path only") != std::string::npos);
}
