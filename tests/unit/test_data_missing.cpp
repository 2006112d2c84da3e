// Missing values (data.missing): markers, loading, statistics over present values, fill values.

#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace {

using dt::config::Missing;
using dt::data::LabelKind;
using dt::data::RowMatrix;

// Every row of a CSV loaded as one shard under `missing`.
dt::data::Shard load_with_missing(const dt::test::CsvFile& file, Missing missing,
                                  LabelKind kind = LabelKind::kNumeric) {
  dt::config::Config config;
  config.data.path = file.path;
  config.data.missing = missing;
  const auto source = dt::data::describe_source(config);
  std::vector<std::uint64_t> rows(source.rows);
  std::iota(rows.begin(), rows.end(), std::uint64_t{0});
  return dt::data::load_shard(config, source, dt::data::to_segments(rows, source.csv), kind);
}

constexpr const char* kHoles = "a,b,y\n1,,3\nNA,5,6\n 7 , ? ,9\n\"\",null,12\n";
const std::string kFillHint =
    "; fill it in the file, or set data.missing: mean or zero to fill missing values "
    "(docs/configs.md, \"Missing values\")";

}  // namespace

TEST_CASE("missing: the markers are pandas' defaults, '?' and the empty cell, nothing else") {
  for (const char* m : {"", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "NULL", "null",
                        "None", "<NA>", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN",
                        "1.#IND", "1.#QNAN", "?"}) {
    CHECK_MESSAGE(dt::data::is_missing_marker(m), m);
  }
  for (const char* m : {"0", "na", "NONE", "inf", "-inf", "Infinity", "missing", "??", " ", "N A"}) {
    CHECK_MESSAGE(!dt::data::is_missing_marker(m), m);
  }
}

TEST_CASE("missing: zero reads a missing cell as 0, mean as NaN, on the general path") {
  const dt::test::CsvFile file(kHoles);
  const auto zero = load_with_missing(file, Missing::kZero);
  CHECK(zero.x == RowMatrix{{1, 0}, {0, 5}, {7, 0}, {0, 0}});
  CHECK(zero.y == Eigen::VectorXd{{3, 6, 9, 12}});
  const auto mean = load_with_missing(file, Missing::kMean);
  CHECK(std::isnan(mean.x(0, 1)));
  CHECK(std::isnan(mean.x(1, 0)));
  CHECK(mean.x(2, 0) == 7.0);
  CHECK(std::isnan(mean.x(3, 0)));
  CHECK(std::isnan(mean.x(3, 1)));
}

TEST_CASE("missing: error (the default) names the cell and data.missing; inf stays an error") {
  const dt::test::CsvFile file(kHoles);
  CHECK(dt::test::data_error([&] { (void)load_with_missing(file, Missing::kError); }) ==
        file.at(":2:3: column 'b': missing value (an empty cell)" + kFillHint));
  const dt::test::CsvFile marker("a,b,y\n1,2,3\nN/A,5,6\n");
  CHECK(dt::test::data_error([&] { (void)load_with_missing(marker, Missing::kError); }) ==
        marker.at(":3:1: column 'a': missing value ('N/A')" + kFillHint));
  const dt::test::CsvFile inf("a,b,y\n1,,3\n4,inf,6\n");
  CHECK(dt::test::data_error([&] { (void)load_with_missing(inf, Missing::kMean); }) ==
        inf.at(":3:3: column 'b': 'inf' is not a finite number"));
  const dt::test::CsvFile text("a,b,y\n1,,3\n4,abc,6\n");
  CHECK(dt::test::data_error([&] { (void)load_with_missing(text, Missing::kZero); }) ==
        text.at(":3:3: column 'b': 'abc' is not a number"));
}

TEST_CASE("missing: a missing label is an error under every policy") {
  const std::string hint =
      "; a row needs its label (data.missing fills feature cells only): drop the row or fill in "
      "its label";
  for (const auto policy : {Missing::kError, Missing::kMean, Missing::kZero}) {
    const dt::test::CsvFile na("a,y\n1,2\n3,NA\n");
    CHECK(dt::test::data_error([&] { (void)load_with_missing(na, policy); }) ==
          na.at(":3:3: label 'y': missing value ('NA')" + hint));
    const dt::test::CsvFile empty("a,y\n1,2\n3,\n");
    CHECK(dt::test::data_error([&] { (void)load_with_missing(empty, policy); }) ==
          empty.at(":3:3: label 'y': missing value (an empty cell)" + hint));
    const dt::test::CsvFile binary("a,y\n1,0\n3,\n");
    CHECK(dt::test::data_error(
              [&] { (void)load_with_missing(binary, policy, LabelKind::kBinary); }) ==
          binary.at(":3:3: label 'y': empty cell; expected 0 or 1"));
  }
}

TEST_CASE("missing: statistics over present values, merged exactly in any split") {
  const double nan = std::nan("");
  const RowMatrix x{{1, nan}, {nan, 5}, {7, 2}, {4, nan}, {nan, nan}};
  const auto s = dt::data::column_stats(x);
  CHECK(s.count == 5);
  CHECK(s.present == std::vector<std::uint64_t>{3, 2});
  CHECK(s.mean == std::vector<double>{4, 3.5});  // (1 + 7 + 4) / 3, (5 + 2) / 2
  CHECK(s.m2 == std::vector<double>{18, 4.5});
  CHECK(s.min == std::vector<double>{1, 2});
  CHECK(s.max == std::vector<double>{7, 5});
  // Split after each row: the merge gives the same counts and (to rounding) the same moments.
  for (Eigen::Index cut = 0; cut <= x.rows(); ++cut) {
    auto merged = dt::data::column_stats(x.topRows(cut));
    dt::data::merge_into(merged, dt::data::column_stats(x.bottomRows(x.rows() - cut)));
    CHECK(merged.count == 5);
    CHECK(merged.present == s.present);
    for (std::size_t j = 0; j < 2; ++j) {
      CHECK(merged.mean[j] == doctest::Approx(s.mean[j]).epsilon(1e-15));
      CHECK(merged.m2[j] == doctest::Approx(s.m2[j]).epsilon(1e-15));
      CHECK(merged.min[j] == s.min[j]);
      CHECK(merged.max[j] == s.max[j]);
    }
  }
  // A shard without a missing value keeps no per-column counts (and its bits).
  const RowMatrix clean{{1, 2}, {3, 4}};
  CHECK(dt::data::column_stats(clean).present.empty());
}

TEST_CASE("missing: fill values, and a filled mean normalizes to 0") {
  const double nan = std::nan("");
  const std::vector<std::string> features{"a", "b"};
  RowMatrix x{{1, nan}, {nan, 5}, {7, 3}};
  const auto stats = dt::data::column_stats(x);
  CHECK(dt::data::missing_fill(Missing::kError, stats, features).empty());
  CHECK(dt::data::missing_fill(Missing::kZero, stats, features) == std::vector<double>{0, 0});
  const auto fill = dt::data::missing_fill(Missing::kMean, stats, features);
  CHECK(fill == std::vector<double>{4, 4});
  auto norm = dt::data::make_normalization(dt::config::Normalize::kStandard, stats, features);
  CHECK(norm.shift == std::vector<double>{4, 4});
  CHECK(norm.scale == std::vector<double>{3, 1});  // sqrt(18 / 2), sqrt(2 / 2): present values only
  norm.missing = Missing::kMean;
  norm.fill = fill;
  dt::data::apply(norm, x);
  CHECK(x == RowMatrix{{-1, 0}, {0, 1}, {1, -1}});
}

TEST_CASE("missing: mean refuses a column without a single present value, naming it") {
  const double nan = std::nan("");
  const RowMatrix x{{1, nan}, {2, nan}};
  auto stats = dt::data::column_stats(x);
  dt::data::merge_into(stats, dt::data::column_stats(RowMatrix{{3, nan}}));
  CHECK(stats.present == std::vector<std::uint64_t>{3, 0});
  CHECK(dt::test::message_of<dt::DataError>([&] {
          (void)dt::data::missing_fill(Missing::kMean, stats, {"age", "income"});
        }) == "column 'income': every training row's value is missing, so data.missing: mean has "
              "no mean to fill it with; drop the column (data.exclude: [income]) or use "
              "data.missing: zero");
}
