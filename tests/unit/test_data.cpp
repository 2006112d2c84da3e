// Data sources, loading shards and class labels.

#include "core/data/csv.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::data::LabelKind;
using dt::data::RowMatrix;
using dt::test::data_error;
using Rows = std::vector<std::uint64_t>;

// A CSV file and a config that reads it.
struct CsvConfig {
  dt::test::CsvFile file;
  dt::config::Config config;
  explicit CsvConfig(const std::string& content, std::optional<std::string> label = std::nullopt)
      : file(content) {
    config.data.path = file.path;
    config.data.label = std::move(label);
  }
  [[nodiscard]] std::string at(const std::string& rest) const { return file.at(rest); }
  // Loads every row as one shard.
  [[nodiscard]] dt::data::Shard load_all(LabelKind kind) const {
    const auto source = dt::data::describe_source(config);
    Rows rows(source.rows);
    std::iota(rows.begin(), rows.end(), std::uint64_t{0});
    return dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv), kind);
  }
};

dt::config::Config synthetic_config(dt::config::SyntheticKind kind, std::int64_t rows,
                                    int features, std::uint64_t seed) {
  dt::config::Config config;
  config.seed = seed;
  dt::config::SyntheticConfig spec;
  spec.kind = kind;
  spec.rows = rows;
  spec.features = features;
  config.data.synthetic = spec;
  return config;
}

const char* const kBinaryHint =
    "logistic_regression and binary mlp need 0/1 labels (use softmax_regression for more classes)";

}  // namespace

TEST_CASE("describe_source: CSV label and features") {
  CsvConfig f("a,b,targets\n1,2,3\n4,5,6\n");
  auto source = dt::data::describe_source(f.config);
  CHECK(source.columns == std::vector<std::string>{"a", "b", "targets"});
  CHECK(source.label == "targets");
  CHECK(source.label_index == 2);
  CHECK(source.features == std::vector<std::string>{"a", "b"});
  CHECK(source.rows == 2);
  REQUIRE(source.csv.has_value());
  CHECK(source.csv->rows() == 2);

  f.config.data.label = "a";
  source = dt::data::describe_source(f.config);
  CHECK(source.label_index == 0);
  CHECK(source.features == std::vector<std::string>{"b", "targets"});

  f.config.data.label = "target";
  CHECK(data_error([&] { (void)dt::data::describe_source(f.config); }) ==
        f.at(": no column 'target' (did you mean 'targets'?); columns are: a, b, targets"));
  f.config.data.label = "zzzzzz";
  CHECK(data_error([&] { (void)dt::data::describe_source(f.config); }) ==
        f.at(": no column 'zzzzzz'; columns are: a, b, targets"));

  const CsvConfig single("y\n1\n2\n");
  CHECK(data_error([&] { (void)dt::data::describe_source(single.config); }) ==
        single.at(": the only column is the label 'y'; there are no feature columns"));
}

TEST_CASE("describe_source: synthetic") {
  auto config = synthetic_config(dt::config::SyntheticKind::kLinear, 50, 3, 1);
  auto source = dt::data::describe_source(config);
  CHECK(source.columns == std::vector<std::string>{"x0", "x1", "x2", "y"});
  CHECK(source.features == std::vector<std::string>{"x0", "x1", "x2"});
  CHECK(source.label == "y");
  CHECK(source.label_index == 3);
  CHECK(source.rows == 50);
  CHECK_FALSE(source.csv.has_value());

  config.data.label = "x1";
  source = dt::data::describe_source(config);
  CHECK(source.label_index == 1);
  CHECK(source.features == std::vector<std::string>{"x0", "x2", "y"});
  config.data.label = "zzz";
  CHECK(data_error([&] { (void)dt::data::describe_source(config); }) ==
        "synthetic data: no column 'zzz'; columns are: x0, x1, x2, y");
}

TEST_CASE("label_kind follows the task") {
  CHECK(dt::data::label_kind(dt::config::Task::kRegression) == LabelKind::kNumeric);
  CHECK(dt::data::label_kind(dt::config::Task::kBinary) == LabelKind::kBinary);
  CHECK(dt::data::label_kind(dt::config::Task::kMulticlass) == LabelKind::kCategorical);
}

TEST_CASE("load_shard: CSV rows in segment order, label in any column") {
  std::string text = "a,y,b\n";
  for (int r = 0; r < 10; ++r) {
    text += r % 3 == 0 ? fmt::format("\"{}\", {} ,{}\n", r, 10 * r, -r)
                       : fmt::format("{},{},{}\r\n", r, 10 * r, -r);
  }
  const CsvConfig f(text, "y");
  const auto source = dt::data::describe_source(f.config);
  const Rows rows = {1, 2, 5, 8, 9};
  RowMatrix want_x(5, 2);
  want_x << 1, -1, 2, -2, 5, -5, 8, -8, 9, -9;
  Eigen::VectorXd want_y(5);
  want_y << 10, 20, 50, 80, 90;

  const auto shard = dt::data::load_shard(f.config, source, dt::data::to_segments(rows, source.csv),
                                          LabelKind::kNumeric);
  CHECK(shard.x == want_x);
  CHECK(shard.y == want_y);
  CHECK(shard.raw_labels.empty());
  // Segments without byte offsets (made without the index) are looked up in it.
  const auto again = dt::data::load_shard(f.config, source,
                                          dt::data::to_segments(rows, std::nullopt),
                                          LabelKind::kNumeric);
  CHECK(again.x == want_x);
  // No rows: an empty shard of the right width.
  const auto empty = dt::data::load_shard(f.config, source, {}, LabelKind::kNumeric);
  CHECK(empty.x.rows() == 0);
  CHECK(empty.x.cols() == 2);
}

TEST_CASE("load_shard: bad cells name file:line:column and the column") {
  const CsvConfig text("a,b,y\n1,2,3\n4,5,6\n7,abc,9\n");
  CHECK(data_error([&] { (void)text.load_all(LabelKind::kNumeric); }) ==
        text.at(":4:3: column 'b': 'abc' is not a number"));
  const CsvConfig nan("a,b,y\n1,2,3\n4,NaN,6\n");
  CHECK(data_error([&] { (void)nan.load_all(LabelKind::kNumeric); }) ==
        nan.at(":3:3: column 'b': missing value ('NaN'); fill it in the file, or set "
               "data.missing: mean or zero to fill missing values (docs/configs.md, \"Missing "
               "values\")"));
  const CsvConfig inf("a,b,y\n1,2,3\n4,5,-inf\n");
  CHECK(data_error([&] { (void)inf.load_all(LabelKind::kNumeric); }) ==
        inf.at(":3:5: column 'y': '-inf' is not a finite number"));
  const CsvConfig empty("age,b,y\n1,2,3\n4,5,6\n7,8,9\n\"\",1,2\n");
  CHECK(data_error([&] { (void)empty.load_all(LabelKind::kNumeric); }) ==
        empty.at(":5:1: column 'age': missing value (an empty cell); fill it in the file, or set "
                 "data.missing: mean or zero to fill missing values (docs/configs.md, \"Missing "
                 "values\")"));
}

TEST_CASE("load_shard: binary labels are 0 or 1") {
  const CsvConfig ok("a,y\n1,0\n2,1\n3,1.0\n4, 0 \n5,\"1\"\n");
  const auto shard = ok.load_all(LabelKind::kBinary);
  CHECK(shard.y == Eigen::VectorXd{{0.0, 1.0, 1.0, 0.0, 1.0}});

  std::string text = "a,b,y\n";
  for (int i = 2; i < 8; ++i) text += "1,2,0\n";
  text += "1,2,2\n";
  const CsvConfig two(text);
  CHECK(data_error([&] { (void)two.load_all(LabelKind::kBinary); }) ==
        two.at(fmt::format(":8:5: label 'y': 2 is not 0 or 1; {}", kBinaryHint)));
  const CsvConfig yes("a,y\n1,yes\n");
  CHECK(data_error([&] { (void)yes.load_all(LabelKind::kBinary); }) ==
        yes.at(fmt::format(":2:3: label 'y': 'yes' is not 0 or 1; {}", kBinaryHint)));
  const CsvConfig blank("a,y\n1,\n");
  CHECK(data_error([&] { (void)blank.load_all(LabelKind::kBinary); }) ==
        blank.at(":2:3: label 'y': empty cell; expected 0 or 1"));

  // Synthetic blobs with three classes do not fit a binary model either.
  auto config = synthetic_config(dt::config::SyntheticKind::kBlobs, 50, 2, 1);
  const auto source = dt::data::describe_source(config);
  const auto message = data_error([&] {
    (void)dt::data::load_shard(config, source, {{0, 50, 0, 0}}, LabelKind::kBinary);
  });
  CHECK(message.starts_with("synthetic data row "));
  CHECK(message.ends_with(fmt::format(": label 'y': 2 is not 0 or 1; {}", kBinaryHint)));
}

TEST_CASE("load_shard: categorical labels become classes") {
  const CsvConfig names("x,species\n1, cat\n2,dog\n3,\"bird\"\n4,cat\n");
  auto shard = names.load_all(LabelKind::kCategorical);
  CHECK(shard.raw_labels == std::vector<std::string>{"cat", "dog", "bird", "cat"});
  CHECK(shard.y == Eigen::VectorXd::Zero(4));
  const auto distinct = dt::data::distinct_labels(shard);
  CHECK(distinct == std::vector<std::string>{"bird", "cat", "dog"});
  const auto classes = dt::data::resolve_classes(distinct);
  CHECK(classes == std::vector<std::string>{"bird", "cat", "dog"});
  dt::data::assign_classes(shard, classes);
  CHECK(shard.y == Eigen::VectorXd{{1.0, 2.0, 0.0, 1.0}});

  const CsvConfig ints("x,y\n1,0\n2,3\n3,02\n");
  auto int_shard = ints.load_all(LabelKind::kCategorical);
  const auto int_classes = dt::data::resolve_classes(dt::data::distinct_labels(int_shard));
  CHECK(int_classes == std::vector<std::string>{"0", "1", "2", "3"});
  dt::data::assign_classes(int_shard, int_classes);
  CHECK(int_shard.y == Eigen::VectorXd{{0.0, 3.0, 2.0}});

  const CsvConfig blank("x,y\n1,a\n2,  \n");
  CHECK(data_error([&] { (void)blank.load_all(LabelKind::kCategorical); }) ==
        blank.at(":3:3: label 'y': empty cell; expected a class"));
}

TEST_CASE("resolve_classes and assign_classes") {
  using dt::data::resolve_classes;
  using V = std::vector<std::string>;
  CHECK(resolve_classes({"2", "0", "5", "2"}) == V{"0", "1", "2", "3", "4", "5"});  // gaps kept
  CHECK(resolve_classes({"b", "a", "c", "a"}) == V{"a", "b", "c"});
  CHECK(resolve_classes({"1", "a"}) == V{"1", "a"});
  CHECK(resolve_classes({"2", "1.5"}) == V{"1.5", "2"});
  CHECK(resolve_classes({"1", "-1"}) == V{"-1", "1"});
  CHECK(resolve_classes({"B", "a"}) == V{"B", "a"});  // byte order, as std::string sorts
  CHECK(resolve_classes({"999"}).size() == 1000);

  V many;
  for (int i = 0; i < 5321; ++i) many.push_back(fmt::format("v{}", i));
  CHECK(data_error([&] { (void)resolve_classes(many); }) ==
        "label column has 5321 distinct values; is it the right column? (a classifier supports "
        "at most 1000 classes)");
  CHECK(data_error([&] { (void)resolve_classes({"5000", "1"}); }) ==
        "label column has integer labels up to 5000 (5001 classes); is it the right column? (a "
        "classifier supports at most 1000 classes)");
  CHECK(data_error([&] { (void)resolve_classes({"a", "a"}); }) ==
        "label column has only one class ('a'); a classifier needs at least two");
  CHECK(data_error([&] { (void)resolve_classes({"0"}); }) ==
        "label column has only one class ('0'); a classifier needs at least two");

  dt::data::Shard shard;
  shard.raw_labels = {"a", "z"};
  CHECK(data_error([&] { dt::data::assign_classes(shard, {"a", "b", "c"}); }) ==
        "label 'z' is not one of the classes ('a', 'b' or 'c')");
  shard.raw_labels = {"1", "7"};
  CHECK(data_error([&] { dt::data::assign_classes(shard, {"0", "1", "2", "3"}); }) ==
        "label '7' is not one of the classes ('0', '1', '2' or '3')");
}

TEST_CASE("load_shard: synthetic rows equal the generator's, label in any column") {
  using dt::config::SyntheticKind;
  auto config = synthetic_config(SyntheticKind::kLinear, 200, 4, 9);
  auto source = dt::data::describe_source(config);
  const auto plan = dt::data::plan_shards(200, {}, 3, dt::config::ShardStrategy::kRandom, 9);
  const auto segments = dt::data::to_segments(plan[1], source.csv);
  const auto shard = dt::data::load_shard(config, source, segments, LabelKind::kNumeric);
  REQUIRE(shard.x.rows() == static_cast<Eigen::Index>(plan[1].size()));
  RowMatrix row(1, 4);
  Eigen::VectorXd label(1);
  bool equal = true;
  for (std::size_t k = 0; k < plan[1].size(); ++k) {
    dt::data::synthesize(*config.data.synthetic, 9, plan[1][k], 1, row, label);
    equal = equal && shard.x.row(static_cast<Eigen::Index>(k)) == row.row(0) &&
            shard.y(static_cast<Eigen::Index>(k)) == label(0);
  }
  CHECK(equal);

  config.data.label = "x2";
  source = dt::data::describe_source(config);
  const auto moved = dt::data::load_shard(config, source, segments, LabelKind::kNumeric);
  CHECK(moved.y == shard.x.col(2));
  CHECK(moved.x.col(0) == shard.x.col(0));
  CHECK(moved.x.col(2) == shard.x.col(3));
  CHECK(moved.x.col(3) == shard.y);

  auto blobs = synthetic_config(SyntheticKind::kBlobs, 60, 2, 4);
  const auto blob_source = dt::data::describe_source(blobs);
  auto blob_shard = dt::data::load_shard(blobs, blob_source, {{0, 60, 0, 0}}, LabelKind::kCategorical);
  RowMatrix bx(60, 2);
  Eigen::VectorXd by(60);
  dt::data::synthesize(*blobs.data.synthetic, 4, 0, 60, bx, by);
  CHECK(blob_shard.x == bx);
  const auto classes = dt::data::resolve_classes(dt::data::distinct_labels(blob_shard));
  CHECK(classes == std::vector<std::string>{"0", "1", "2"});
  dt::data::assign_classes(blob_shard, classes);
  CHECK(blob_shard.y == by);
}

TEST_CASE("load_shard: a random plan over a CSV reads exactly the rows it names") {
  // A CSV written from synthetic rows with shortest round-trip doubles reads back bit for bit.
  auto synthetic = synthetic_config(dt::config::SyntheticKind::kLinear, 3000, 5, 2);
  RowMatrix x(3000, 5);
  Eigen::VectorXd y(3000);
  dt::data::synthesize(*synthetic.data.synthetic, 2, 0, 3000, x, y);
  std::string text = "x0,x1,x2,x3,x4,y\n";
  for (Eigen::Index r = 0; r < 3000; ++r) {
    text += fmt::format("{},{},{},{},{},{}\n", x(r, 0), x(r, 1), x(r, 2), x(r, 3), x(r, 4), y(r));
  }
  const CsvConfig f(text);
  const auto source = dt::data::describe_source(f.config);
  const auto held = dt::data::validation_rows(3000, 0.1, 2);
  const auto plan = dt::data::plan_shards(3000, held, 3, dt::config::ShardStrategy::kRandom, 2);
  std::size_t total = 0;
  for (const auto& rows : plan) {
    const auto shard = dt::data::load_shard(f.config, source, dt::data::to_segments(rows, source.csv),
                                            LabelKind::kNumeric);
    bool equal = true;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const auto r = static_cast<Eigen::Index>(rows[k]);
      equal = equal && shard.x.row(static_cast<Eigen::Index>(k)) == x.row(r) &&
              shard.y(static_cast<Eigen::Index>(k)) == y(r);
    }
    CHECK(equal);
    total += rows.size();
  }
  CHECK(total == 2700);
}

TEST_CASE("load_shard: a worker without the index reads through its segments' offsets") {
  const CsvConfig f("a,y,b\n1,10,-1\n2,20,-2\n\"3\",30,-3\n4,40,-4\n", "y");
  auto source = dt::data::describe_source(f.config);
  const auto segments = dt::data::to_segments({1, 2, 3}, source.csv);
  source.csv.reset();  // what a worker gets in its setup message
  const auto shard = dt::data::load_shard(f.config, source, segments, LabelKind::kNumeric);
  RowMatrix want(3, 2);
  want << 2, -2, 3, -3, 4, -4;
  CHECK(shard.x == want);
  CHECK(shard.y == Eigen::VectorXd{{20.0, 30.0, 40.0}});
  CHECK(data_error([&] {
          (void)dt::data::load_shard(f.config, source, dt::data::to_segments({1}, std::nullopt),
                                     LabelKind::kNumeric);
        }) == f.at(": no byte offset for data row 2; segments for a CSV need the index"));
}

TEST_CASE("load_shard: no label, and features chosen by name (predict)") {
  const CsvConfig f("a,y,b,extra\n1,cat,-1,x\n2,dog,-2,y\n");
  auto source = dt::data::describe_source(f.config);
  source.features = {"b", "a"};  // the model's order, not the file's; 'extra' unused
  source.label_index = dt::data::kNoLabel;
  const auto shard = dt::data::load_shard(f.config, source,
                                          dt::data::to_segments({0, 1}, source.csv),
                                          LabelKind::kCategorical);
  RowMatrix want(2, 2);
  want << -1, 1, -2, 2;
  CHECK(shard.x == want);
  CHECK(shard.raw_labels.empty());
  CHECK(shard.y == Eigen::VectorXd::Zero(2));

  source.features = {"a", "bb"};
  CHECK(data_error([&] {
          (void)dt::data::load_shard(f.config, source, dt::data::to_segments({0}, source.csv),
                                     LabelKind::kNumeric);
        }) == f.at(": no column 'bb' (did you mean 'b'?); columns are: a, y, b, extra"));

  // Synthetic data read without its label: every generated column is a feature.
  auto config = synthetic_config(dt::config::SyntheticKind::kLinear, 10, 2, 3);
  auto synthetic = dt::data::describe_source(config);
  synthetic.features = synthetic.columns;
  synthetic.label_index = dt::data::kNoLabel;
  const auto all = dt::data::load_shard(config, synthetic, {{0, 10, 0, 0}}, LabelKind::kNumeric);
  RowMatrix x(10, 2);
  Eigen::VectorXd y(10);
  dt::data::synthesize(*config.data.synthetic, 3, 0, 10, x, y);
  CHECK(all.x.leftCols(2) == x);
  CHECK(all.x.col(2) == y);
}
