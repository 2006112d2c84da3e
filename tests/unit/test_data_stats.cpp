// Column statistics, normalization and synthetic data.

#include "core/data/dataset.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

namespace {

using dt::data::ColumnStats;
using dt::data::RowMatrix;

// Rows with very different scales and offsets per column (column 1 sits at 1e3 with a spread of
// 0.1, where a naive sum-of-squares formula would lose about eight digits).
RowMatrix sample(Eigen::Index rows) {
  RowMatrix x(rows, 3);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const double t = static_cast<double>(r);
    x(r, 0) = std::sin(t * 0.7) * 3.0 + 1.0;
    x(r, 1) = 1e3 + std::cos(t * 1.3) * 0.1;
    x(r, 2) = static_cast<double>((r * 7919) % 101) - 50.0;
  }
  return x;
}

void check_close(const ColumnStats& a, const ColumnStats& b) {
  REQUIRE(a.count == b.count);
  REQUIRE(a.mean.size() == b.mean.size());
  for (std::size_t j = 0; j < a.mean.size(); ++j) {
    CHECK(std::abs(a.mean[j] - b.mean[j]) <= 1e-12 * std::max(1.0, std::abs(b.mean[j])));
    CHECK(std::abs(a.m2[j] - b.m2[j]) <= 1e-12 * std::max(1.0, std::abs(b.m2[j])));
    CHECK(a.min[j] == b.min[j]);
    CHECK(a.max[j] == b.max[j]);
  }
}

}  // namespace

TEST_CASE("column_stats: mean, M2, min, max in closed form") {
  RowMatrix x(4, 2);
  x << 1, 10, 2, 10, 3, 10, 4, 10;
  const auto s = dt::data::column_stats(x);
  CHECK(s.count == 4);
  CHECK(s.mean == std::vector<double>{2.5, 10.0});
  CHECK(s.m2 == std::vector<double>{5.0, 0.0});
  CHECK(s.min == std::vector<double>{1.0, 10.0});
  CHECK(s.max == std::vector<double>{4.0, 10.0});
}

TEST_CASE("merge_into: merged statistics equal those of the concatenation, in any split") {
  const RowMatrix x = sample(997);
  const auto whole = dt::data::column_stats(x);
  for (const std::vector<Eigen::Index>& cuts :
       {std::vector<Eigen::Index>{0, 500, 997}, {0, 1, 997}, {0, 0, 300, 301, 700, 997},
        {0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 997}}) {
    ColumnStats merged;  // default-constructed: the identity
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const RowMatrix part = x.middleRows(cuts[i], cuts[i + 1] - cuts[i]);
      dt::data::merge_into(merged, dt::data::column_stats(part));
    }
    check_close(merged, whole);
  }
  // An empty shard merges as the identity on either side.
  const auto empty = dt::data::column_stats(RowMatrix(0, 3));
  CHECK(empty.count == 0);
  CHECK(empty.mean.size() == 3);
  auto left = empty;
  dt::data::merge_into(left, whole);
  check_close(left, whole);
  auto right = whole;
  dt::data::merge_into(right, empty);
  CHECK(right.mean == whole.mean);
  CHECK(right.m2 == whole.m2);
}

TEST_CASE("make_normalization and apply") {
  using dt::config::Normalize;
  RowMatrix x(4, 3);
  x << 1, 5, 7, 2, 5, -1, 3, 5, 3, 4, 5, 3;
  const auto stats = dt::data::column_stats(x);
  const std::vector<std::string> names{"a", "flat", "c"};

  const auto standard = dt::data::make_normalization(Normalize::kStandard, stats, names);
  CHECK(standard.shift == std::vector<double>{2.5, 0.0, 3.0});
  CHECK(standard.scale[0] == doctest::Approx(std::sqrt(1.25)));
  CHECK(standard.scale[1] == 1.0);
  CHECK(standard.scale[2] == doctest::Approx(std::sqrt(8.0)));
  CHECK(standard.constant_columns == std::vector<std::string>{"flat"});
  RowMatrix z = x;
  const double* before = z.data();
  dt::data::apply(standard, z);
  CHECK(z.data() == before);  // in place
  const auto zs = dt::data::column_stats(z);
  CHECK(std::abs(zs.mean[0]) < 1e-15);
  CHECK(zs.m2[0] / 4 == doctest::Approx(1.0));
  CHECK(z(0, 1) == 5.0);  // the constant column is left alone, never divided by zero
  CHECK(std::abs(zs.mean[2]) < 1e-15);

  const auto minmax = dt::data::make_normalization(Normalize::kMinmax, stats, names);
  CHECK(minmax.shift == std::vector<double>{1.0, 0.0, -1.0});
  CHECK(minmax.scale == std::vector<double>{3.0, 1.0, 8.0});
  CHECK(minmax.constant_columns == std::vector<std::string>{"flat"});
  RowMatrix m = x;
  dt::data::apply(minmax, m);
  CHECK(m.col(0).minCoeff() == 0.0);
  CHECK(m.col(0).maxCoeff() == 1.0);
  CHECK(m.col(2).minCoeff() == 0.0);
  CHECK(m.col(2).maxCoeff() == 1.0);

  const auto none = dt::data::make_normalization(Normalize::kNone, stats, names);
  CHECK(none.shift == std::vector<double>{0, 0, 0});
  CHECK(none.scale == std::vector<double>{1, 1, 1});
  CHECK(none.constant_columns.empty());
  RowMatrix n = x;
  dt::data::apply(none, n);
  CHECK(n == x);

  // A column constant up to rounding noise is constant too.
  RowMatrix big(3, 1);
  big << 1e6, 1e6 + 1e-10, 1e6;
  CHECK(dt::data::make_normalization(Normalize::kStandard, dt::data::column_stats(big), {"big"})
            .constant_columns == std::vector<std::string>{"big"});
}

TEST_CASE("synthesize: row i depends only on (seed, i)") {
  using dt::config::SyntheticKind;
  for (auto kind : {SyntheticKind::kLinear, SyntheticKind::kLogistic, SyntheticKind::kBlobs}) {
    dt::config::SyntheticConfig spec;
    spec.kind = kind;
    spec.features = 5;
    spec.classes = 4;
    RowMatrix all(100, 5);
    Eigen::VectorXd y_all(100);
    dt::data::synthesize(spec, 11, 0, 100, all, y_all);
    RowMatrix pieces(100, 5);
    Eigen::VectorXd y_pieces(100);
    dt::data::synthesize(spec, 11, 0, 37, pieces.topRows(37), y_pieces.head(37));
    dt::data::synthesize(spec, 11, 37, 63, pieces.bottomRows(63), y_pieces.tail(63));
    CHECK(std::memcmp(all.data(), pieces.data(), sizeof(double) * 500) == 0);
    CHECK(std::memcmp(y_all.data(), y_pieces.data(), sizeof(double) * 100) == 0);

    RowMatrix other(100, 5);
    Eigen::VectorXd y_other(100);
    dt::data::synthesize(spec, 12, 0, 100, other, y_other);
    CHECK(other != all);

    if (kind != SyntheticKind::kLinear) {
      const double top = kind == SyntheticKind::kBlobs ? 3.0 : 1.0;
      CHECK(y_all.minCoeff() == 0.0);
      CHECK(y_all.maxCoeff() == top);
      CHECK((y_all.array() == y_all.array().round()).all());
    }
  }
  CHECK(dt::data::synthetic_columns(dt::config::SyntheticConfig{.features = 3}) ==
        std::vector<std::string>{"x0", "x1", "x2", "y"});
}

TEST_CASE("synthesize: noiseless linear data is exactly linear") {
  dt::config::SyntheticConfig spec;
  spec.kind = dt::config::SyntheticKind::kLinear;
  spec.features = 6;
  spec.noise = 0.0;
  const Eigen::Index n = 2000;
  RowMatrix x(n, 6);
  Eigen::VectorXd y(n);
  dt::data::synthesize(spec, 3, 0, n, x, y);
  // Ordinary least squares on [x 1]: the residual is rounding only, and the features look N(0,1).
  Eigen::MatrixXd a(n, 7);
  a << x, Eigen::VectorXd::Ones(n);
  const Eigen::VectorXd w = a.colPivHouseholderQr().solve(y);
  CHECK((a * w - y).cwiseAbs().maxCoeff() < 1e-9);
  const auto s = dt::data::column_stats(x);
  for (std::size_t j = 0; j < 6; ++j) {
    CHECK(std::abs(s.mean[j]) < 0.1);
    CHECK(std::sqrt(s.m2[j] / n) == doctest::Approx(1.0).epsilon(0.1));
  }
  // With noise the same rows get different labels but the same features.
  spec.noise = 0.5;
  RowMatrix xn(n, 6);
  Eigen::VectorXd yn(n);
  dt::data::synthesize(spec, 3, 0, n, xn, yn);
  CHECK(xn == x);
  const double noise_std = std::sqrt((yn - y).squaredNorm() / static_cast<double>(n));
  CHECK(noise_std == doctest::Approx(0.5).epsilon(0.1));
}

TEST_CASE("synthesize: blobs are centered on their class means") {
  dt::config::SyntheticConfig spec;
  spec.kind = dt::config::SyntheticKind::kBlobs;
  spec.features = 2;
  spec.classes = 3;
  spec.noise = 0.1;
  RowMatrix x(3000, 2);
  Eigen::VectorXd y(3000);
  dt::data::synthesize(spec, 5, 0, 3000, x, y);
  for (int k = 0; k < 3; ++k) {
    std::vector<Eigen::Index> rows;
    for (Eigen::Index r = 0; r < 3000; ++r) {
      if (y(r) == k) rows.push_back(r);
    }
    CHECK(rows.size() > 800);  // classes are balanced
    Eigen::RowVector2d mean = Eigen::RowVector2d::Zero();
    for (auto r : rows) mean += x.row(r);
    mean /= static_cast<double>(rows.size());
    double spread = 0.0;
    for (auto r : rows) spread = std::max(spread, (x.row(r) - mean).norm());
    CHECK(spread < 0.1 * 6);  // within 6 sigma (per coordinate noise 0.1, two coordinates)
  }
}
