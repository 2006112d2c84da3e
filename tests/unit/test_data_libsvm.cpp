// LIBSVM text: the line parser (labels, index:value pairs, qid, comments, the refusals with their
// columns), the index (rows, widths, line numbers past blank and comment lines), the dense load
// of a worker's segments (by byte offset, without the index), detection, and the limits.

#include "core/data/libsvm.hpp"
#include "core/data/npy.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

using dt::data::LineKind;

std::filesystem::path write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The problem's "column: what" for a bad line, or "(parsed)".
std::string problem(const std::string& line) {
  dt::data::LibsvmRow row;
  dt::data::LibsvmProblem p;
  if (dt::data::parse_libsvm_line(line, row, p) != LineKind::kError) return "(parsed)";
  return std::to_string(p.column) + ": " + p.what;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dt::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

dt::config::Config libsvm_config(const std::filesystem::path& path) {
  dt::config::Config config;
  config.data.path = path;
  config.data.format = dt::config::DataFormat::kLibsvm;
  return config;
}

}  // namespace

TEST_CASE("libsvm: a line's label, pairs, qid and comment") {
  dt::data::LibsvmRow row;
  dt::data::LibsvmProblem p;
  REQUIRE(dt::data::parse_libsvm_line("+1 qid:3 1:0.5\t7:-2e3  12:1 # note 5:5\r", row, p) ==
          LineKind::kRow);
  CHECK(row.label == "+1");
  CHECK(row.label_value == 1.0);
  REQUIRE(row.entries.size() == 3);
  CHECK(row.entries[0].index == 1);
  CHECK(row.entries[0].value == 0.5);
  CHECK(row.entries[1].index == 7);
  CHECK(row.entries[1].value == -2000.0);
  CHECK(row.entries[2].index == 12);
  REQUIRE(dt::data::parse_libsvm_line("-1", row, p) == LineKind::kRow);
  CHECK(row.label_value == -1.0);
  CHECK(row.entries.empty());  // reused: the previous line's pairs are gone
  CHECK(dt::data::parse_libsvm_line("   # only a comment", row, p) == LineKind::kBlank);
  CHECK(dt::data::parse_libsvm_line("", row, p) == LineKind::kBlank);
  CHECK(dt::data::parse_libsvm_line("\r", row, p) == LineKind::kBlank);
}

TEST_CASE("libsvm: bad lines are refused at their column with what to do") {
  CHECK(problem("1 3:0.5 2:1") == "9: index 2 comes after index 3; indices must increase along a "
                                  "line: sort each line's index:value pairs by index");
  CHECK(problem("1 3:0.5 3:1") == "9: index 3 appears twice; give each index once");
  CHECK(problem("1 3:abc") == "5: the value of index 3, 'abc', is not a finite number");
  CHECK(problem("1 3:nan") == "5: the value of index 3, 'nan', is not a finite number");
  CHECK(problem("1 3:") == "5: the value of index 3, '', is not a finite number");
  CHECK(problem("1 x:1").starts_with("3: 'x:1' is not index:value"));
  CHECK(problem("1 -3:1").starts_with("3: '-3:1' is not index:value"));
  CHECK(problem("1 3").starts_with("3: '3' is not index:value"));
  CHECK(problem("3:1 4:1").starts_with("1: the line starts with '3:1', not a label"));
  CHECK(problem("1,2 3:1").starts_with("1: label '1,2' is a list (multi-label LIBSVM)"));
  CHECK(problem("yes 3:1").starts_with("1: label 'yes' is not a finite number"));
  CHECK(problem("1 99999999999:1").starts_with("3: index 99999999999 is too large"));
}

TEST_CASE("libsvm: the index finds rows, widths and the lines of index 0 and of the largest") {
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto path = write_text(dir.path() / "d.svm",
                               "# made by hand\n1 2:1 5:2\n\n0 1:3\n1 0:4 9:1 # c\n-1 qid:2");
  const auto index = dt::data::index_libsvm(path);
  CHECK(index.rows.rows() == 4);
  CHECK(index.rows.row_line == std::vector<std::uint64_t>{2, 4, 5, 6});
  CHECK(index.rows.row_offset[1] == std::string("# made by hand\n1 2:1 5:2\n\n").size());
  CHECK(index.max_index == 9);
  CHECK(index.max_index_line == 5);
  CHECK(index.zero_index_line == 5);
  CHECK(error_of([&] { (void)dt::data::index_libsvm(write_text(dir.path() / "e.svm", "1 1:1\n1 2:1 1:1\n")); })
            .find("e.svm:2:7: index 1 comes after index 2") != std::string::npos);
  // The index leaves values to the workers, who name the line.
  const auto late = write_text(dir.path() / "v.svm", "1 1:1\n1 2:x\n");
  auto config = libsvm_config(late);
  const auto source = dt::data::describe_source(config);
  CHECK(error_of([&] {
          (void)dt::data::load_shard(config, source, dt::data::to_segments({0, 1}, source.csv),
                                     dt::data::LabelKind::kNumeric);
        }).ends_with("v.svm:2:5: the value of index 2, 'x', is not a finite number"));
  CHECK(error_of([&] { (void)dt::data::index_libsvm(write_text(dir.path() / "n.svm", "# nothing\n")); })
            .find("n.svm: no rows") != std::string::npos);
}

TEST_CASE("libsvm: 1-based columns f1..fW, a worker's rows loaded by byte offset") {
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto path = write_text(dir.path() / "d.svm", "1 1:0.5 3:2\n-1 2:1\n\n+1 3:-1 # c\n0 1:7\n");
  auto config = libsvm_config(path);
  const auto source = dt::data::describe_source(config);
  CHECK(source.columns == std::vector<std::string>{"f1", "f2", "f3", "y"});
  CHECK(source.features == std::vector<std::string>{"f1", "f2", "f3"});
  CHECK(source.rows == 4);
  // A worker: rows 1..3 through their byte offsets, no index.
  auto worker = source;
  const auto segments = dt::data::to_segments({1, 2, 3}, source.csv);
  worker.csv.reset();
  const auto shard = dt::data::load_shard(config, worker, segments, dt::data::LabelKind::kBinary);
  REQUIRE(shard.x.rows() == 3);
  CHECK(shard.x(0, 0) == 0.0);
  CHECK(shard.x(0, 1) == 1.0);
  CHECK(shard.x(1, 2) == -1.0);
  CHECK(shard.x(2, 0) == 7.0);
  CHECK(shard.y(0) == 0.0);  // -1
  CHECK(shard.y(1) == 1.0);  // +1
  CHECK(shard.y(2) == 0.0);
  // Class indices for softmax: "+1" and "1" are one class.
  const auto all = dt::data::to_segments({0, 1, 2, 3}, source.csv);
  const auto classes = dt::data::load_shard(config, source, all, dt::data::LabelKind::kCategorical);
  CHECK(classes.raw_labels == std::vector<std::string>{"1", "-1", "1", "0"});
  // A label that is not binary, named at its line.
  write_text(path, "2 1:1\n");
  const auto two = dt::data::describe_source(config);
  CHECK(error_of([&] {
          (void)dt::data::load_shard(config, two, dt::data::to_segments({0}, two.csv),
                                     dt::data::LabelKind::kBinary);
        }).find("d.svm:1:1: label 2 is not 0 or 1 (nor -1 or +1") != std::string::npos);
}

TEST_CASE("libsvm: index_base auto, 0 and 1; feature_count; data.features") {
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto zero = write_text(dir.path() / "z.svm", "1 0:1 2:1\n0 1:1\n");
  auto config = libsvm_config(zero);
  CHECK(dt::data::describe_source(config).features == std::vector<std::string>{"f0", "f1", "f2"});
  config.data.index_base = 1;
  CHECK(error_of([&] { (void)dt::data::describe_source(config); })
            .find("z.svm:1: index 0, but data.index_base is 1") != std::string::npos);
  const auto one = write_text(dir.path() / "o.svm", "1 1:1 3:1\n0 2:1\n");
  config = libsvm_config(one);
  config.data.index_base = 0;  // forced 0-based: f0 is a column the file never uses
  CHECK(dt::data::describe_source(config).features ==
        std::vector<std::string>{"f0", "f1", "f2", "f3"});
  config.data.index_base = -1;
  config.data.feature_count = 5;
  CHECK(dt::data::describe_source(config).features.back() == "f5");
  config.data.feature_count = 2;
  CHECK(error_of([&] { (void)dt::data::describe_source(config); })
            .find("o.svm:1: index 3 is past data.feature_count 2 (the last feature is f2)") !=
        std::string::npos);
  config.data.feature_count = 0;
  config.data.features = {"f1", "f3"};
  const auto picked = dt::data::describe_source(config);
  CHECK(picked.features == std::vector<std::string>{"f1", "f3"});
  const auto shard = dt::data::load_shard(config, picked, dt::data::to_segments({0, 1}, picked.csv),
                                          dt::data::LabelKind::kNumeric);
  CHECK(shard.x(0, 1) == 1.0);
  CHECK(shard.x(1, 0) == 0.0);  // f2 is not loaded
  CHECK(shard.x(1, 1) == 0.0);
}

TEST_CASE("libsvm: the dense size limit, no features, and data.label") {
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto path = write_text(dir.path() / "w.svm", "1 1:1 1000000:1\n0 2:1\n");
  auto config = libsvm_config(path);
  config.data.max_dense_gib = 0.01;  // 2 rows x 1e6 features x 8 bytes = 0.015 GiB
  config.data.sparse = dt::config::SparseChoice::kOff;  // auto reads it sparse (test_data_sparse)
  CHECK(error_of([&] { (void)dt::data::describe_source(config); })
            .find("2 rows x 1000000 features is 0.0149 GiB as dense float64, more than "
                  "data.max_dense_gib (0.01); set data.sparse: auto (or true) to keep the rows "
                  "sparse, raise data.max_dense_gib") != std::string::npos);
  config.data.max_dense_gib = 1;
  CHECK(dt::data::describe_source(config).features.size() == 1000000);
  config = libsvm_config(write_text(dir.path() / "n.svm", "1\n0\n"));
  CHECK(error_of([&] { (void)dt::data::describe_source(config); })
            .find("no line has an index:value pair") != std::string::npos);
  config.data.feature_count = 2;
  CHECK(dt::data::describe_source(config).features.size() == 2);
  config.data.label = "target";
  CHECK(error_of([&] { (void)dt::data::describe_source(config); })
            .find("data.label 'target': a LIBSVM file's label is the first number") !=
        std::string::npos);
}

TEST_CASE("libsvm: told from CSV by name and content, and refused when they disagree") {
  using dt::config::DataFormat;
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto svm = write_text(dir.path() / "a.txt", "# c\n1 3:0.5 7:1\n");
  const auto csv = write_text(dir.path() / "b.svm", "a,b,y\n1,2,3\n");
  const auto hidden = write_text(dir.path() / "c.csv", "1 3:0.5 7:1\n");
  const auto zeros = write_text(dir.path() / "d.svm", "1\n0 2:1\n");
  CHECK(dt::data::format_of(svm, DataFormat::kAuto, "data.path") == DataFormat::kLibsvm);
  CHECK(dt::data::format_of(zeros, DataFormat::kAuto, "data.path") == DataFormat::kLibsvm);
  CHECK(dt::data::format_of(svm, DataFormat::kLibsvm, "data.path") == DataFormat::kLibsvm);
  CHECK(error_of([&] { (void)dt::data::format_of(csv, DataFormat::kAuto, "data.path"); })
            .find("the name says LIBSVM sparse text (label index:value ...), but the file starts "
                  "like text (CSV): name it") != std::string::npos);
  CHECK(error_of([&] { (void)dt::data::format_of(hidden, DataFormat::kAuto, "data.path"); })
            .find("or set data.format: libsvm") != std::string::npos);
  CHECK(error_of([&] { (void)dt::data::format_of(hidden, DataFormat::kCsv, "data.path"); })
            .find("data.format is csv, but the file looks like LIBSVM") != std::string::npos);
  CHECK(error_of([&] { (void)dt::data::format_of(csv, DataFormat::kLibsvm, "data.path"); })
            .find("data.format is libsvm, but the file looks like text (CSV); set data.format: csv") !=
        std::string::npos);
  CHECK_FALSE(dt::data::looks_like_libsvm("a,b,y\n1,2,3\n", true));
  CHECK_FALSE(dt::data::looks_like_libsvm("1\n", false));
  CHECK(dt::data::looks_like_libsvm("1 qid:4\n", false));
}

TEST_CASE("libsvm: the config keys, their round trip and their refusals") {
  using dt::config::parse;
  const auto c = parse("version: 1\ndata: {path: a.svm, index_base: 0, feature_count: 12, "
                       "max_dense_gib: 2.5}\n", "a.yaml", "/tmp");
  CHECK(c.data.index_base == 0);
  CHECK(c.data.feature_count == 12);
  CHECK(c.data.max_dense_gib == 2.5);
  const auto again = parse(dt::config::to_yaml(c), "r.yaml", "/tmp");
  CHECK(again.data.index_base == 0);
  CHECK(again.data.feature_count == 12);
  CHECK(again.data.max_dense_gib == 2.5);
  CHECK(parse("version: 1\ndata: {path: a.svm, format: libsvm}\n", "a.yaml", "/tmp").data.format ==
        dt::config::DataFormat::kLibsvm);
  const auto refused = [](const std::string& text) {
    try {
      (void)parse(text, "a.yaml", "/tmp");
    } catch (const dt::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(refused("version: 1\ndata: {path: a.svm, index_base: 2}\n")
            .find("data.index_base: expected auto, 0 or 1, got '2'") != std::string::npos);
  CHECK(refused("version: 1\ndata: {path: a.svm, feature_count: 0}\n").find("feature_count") !=
        std::string::npos);
  CHECK(refused("version: 1\ndata: {synthetic: {kind: linear}, index_base: 1}\n")
            .find("applies to a LIBSVM data.path only") != std::string::npos);
}

TEST_CASE("libsvm: a worker's own copy (--data) of a LIBSVM file is read from its own index") {
  const dt::files::TempDir dir("dt-test-libsvm");
  const auto path = write_text(dir.path() / "data.txt", "1 1:1\n0 2:1\n");
  auto config = libsvm_config(path);
  const auto source = dt::data::describe_source(config);
  const auto segments = dt::data::to_segments({0, 1}, source.csv);
  // The same rows with a comment line first: other byte offsets, found by number.
  const auto copy = write_text(dir.path() / "copy.txt", "# a copy\n1 1:1\n0 2:1\n");
  auto mine = source;
  auto my_segments = segments;
  dt::data::use_local_copy(copy, config.data, mine, my_segments);
  const auto shard = dt::data::load_shard(config, mine, my_segments, dt::data::LabelKind::kBinary);
  REQUIRE(shard.x.rows() == 2);
  CHECK(shard.x(0, 0) == 1.0);
  CHECK(shard.x(1, 1) == 1.0);
  CHECK(shard.y(0) == 1.0);
  // Another row count, or an index past the coordinator's last feature (f2): refused.
  const auto short_copy = write_text(dir.path() / "short.txt", "1 1:1\n");
  auto s2 = source;
  auto g2 = segments;
  CHECK(error_of([&] { dt::data::use_local_copy(short_copy, config.data, s2, g2); })
            .find("short.txt: it has 1 rows, the coordinator's data has 2") != std::string::npos);
  const auto wide = write_text(dir.path() / "wide.txt", "1 1:1\n0 2:1 9:1\n");
  auto s3 = source;
  auto g3 = segments;
  CHECK(error_of([&] { dt::data::use_local_copy(wide, config.data, s3, g3); })
            .find("wide.txt:2: index 9 is past the coordinator's last feature, f2") !=
        std::string::npos);
}
