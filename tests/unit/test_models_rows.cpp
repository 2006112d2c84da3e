// The row-by-row path of the training step: the SIMD kernels' fixed summation order, and
// batches that pick a shuffled epoch's rows in place giving the very bits of the same rows
// gathered by hand, for every model type.

#include "core/models/kernels.hpp"
#include "core/models/model.hpp"
#include "core/models/warm_rows.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using dt::config::Activation;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::BatchResult;
using dt::models::BatchRows;
using dt::models::RowMatrix;
using dt::test::random_batch;
using dt::test::random_params;
using dt::test::spec_of;

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("kernels: dot adds in 8 fixed lanes, then the lanes in a fixed tree") {
  namespace k = dt::models::kernels;
  // Element i goes to lane i mod 8. With 1e16 in lane 0 and ones elsewhere, the order decides
  // what survives rounding: the documented order keeps every 1 added to its own lane first.
  std::vector<double> a(19, 1.0);
  std::vector<double> ones(19, 1.0);
  a[0] = 1e16;
  a[8] = -1e16;  // lane 0 again: cancels exactly before the lanes meet
  // lane 0: 1e16 - 1e16 + 1 (a[16]) = 1; lanes 1, 2: 3 each (i = 1, 9, 17 and 2, 10, 18);
  // lanes 3..7: 2 each; total 1 + 6 + 10 = 17.
  CHECK(k::dot(a.data(), ones.data(), a.size()) == 17.0);
  // A naive left-to-right sum would lose the ones added to 1e16 (1e16 + 1 == 1e16).
  double naive = 0;
  for (double v : a) naive += v;
  CHECK(naive != 17.0);

  // Every length, against the rule written out by hand.
  for (std::size_t n = 0; n <= 40; ++n) {
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = 1.0 / static_cast<double>(i + 3);
      y[i] = static_cast<double>(i % 7) - 2.5;
    }
    double lane[8] = {};
    for (std::size_t i = 0; i < n; ++i) lane[i % 8] += x[i] * y[i];
    const double expected =
        ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
    INFO("n = ", n);
    CHECK(same_bits(k::dot(x.data(), y.data(), n), expected));
  }
}

TEST_CASE("kernels: axpy adds alpha * x to y element by element") {
  namespace k = dt::models::kernels;
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::vector<double> y(x.size(), 0.5);
  k::axpy(-2.0, x.data(), y.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == 0.5 - 2.0 * x[i]);
  k::axpy(3.0, x.data(), y.data(), 0);  // nothing to do
  CHECK(y[0] == -1.5);
}

TEST_CASE("kernels: axpy4 adds four rows in the fixed grouping (a0 x0 + a1 x1) + (a2 x2 + a3 x3)") {
  namespace k = dt::models::kernels;
  // Values whose sums round differently in another grouping, at every length around the
  // vector widths.
  for (std::size_t n = 0; n <= 19; ++n) {
    std::vector<std::vector<double>> x(4, std::vector<double>(n));
    std::vector<double> y(n), expected(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t r = 0; r < 4; ++r) x[r][i] = (r % 2 == 0 ? 1e16 : 1.0) * (1.0 + 0.1 * static_cast<double>(i + r));
      y[i] = 0.3 * static_cast<double>(i);
    }
    const double alpha[4] = {1.0, 3.0, -1.0, 0.7};
    for (std::size_t i = 0; i < n; ++i) {
      expected[i] = y[i] + ((alpha[0] * x[0][i] + alpha[1] * x[1][i]) +
                            (alpha[2] * x[2][i] + alpha[3] * x[3][i]));
    }
    const double* rows[4] = {x[0].data(), x[1].data(), x[2].data(), x[3].data()};
    k::axpy4(alpha, rows, y.data(), n);
    INFO("n = ", n);
    CHECK(same_bits(y, expected));
  }
}

TEST_CASE("kernels: add_row_times and add_outer give the bits of one axpy per feature") {
  namespace k = dt::models::kernels;
  // Values of very different sizes, so that another order of the adds would round
  // differently; widths around the vector lengths, and k = 1.
  for (const std::size_t p : {std::size_t{1}, std::size_t{3}, std::size_t{17}}) {
    for (const std::size_t width : {std::size_t{1}, std::size_t{2}, std::size_t{5},
                                    std::size_t{10}, std::size_t{13}}) {
      std::vector<double> x(p), w(p * width), d(width);
      for (std::size_t f = 0; f < p; ++f) x[f] = (f % 2 == 0 ? 1e16 : 1.0) * (0.3 + 0.1 * static_cast<double>(f));
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = (i % 3 == 0 ? -1e-3 : 7.0) * (1.0 + 0.01 * static_cast<double>(i));
      for (std::size_t c = 0; c < width; ++c) d[c] = 0.5 - 0.25 * static_cast<double>(c);

      std::vector<double> out(width, 0.1), expected(width, 0.1);
      for (std::size_t f = 0; f < p; ++f) k::axpy(x[f], w.data() + f * width, expected.data(), width);
      k::add_row_times(x.data(), w.data(), p, width, out.data());
      INFO("p = ", p, ", k = ", width);
      CHECK(same_bits(out, expected));

      std::vector<double> g(w), g_expected(w);
      for (std::size_t f = 0; f < p; ++f) k::axpy(x[f], d.data(), g_expected.data() + f * width, width);
      k::add_outer(x.data(), p, d.data(), width, g.data());
      CHECK(same_bits(g, g_expected));
      // And the axpy itself is what it says, so the comparisons above are against y += a x.
      CHECK(same_bits(g[0], w[0] + x[0] * d[0]));
    }
  }
}

TEST_CASE("models: a batch of picked rows gives the bits of the same rows gathered by hand") {
  struct Case {
    const char* name;
    dt::models::ModelSpec spec;
    Task task;
    int classes;
  };
  const Case cases[] = {
      {"linear", spec_of(ModelType::kLinearRegression, 13), Task::kRegression, 0},
      {"logistic", spec_of(ModelType::kLogisticRegression, 13), Task::kBinary, 0},
      {"softmax", spec_of(ModelType::kSoftmaxRegression, 13, 4), Task::kMulticlass, 4},
      {"mlp", spec_of(ModelType::kMlp, 13, 3, {7}, Activation::kTanh, Task::kMulticlass), Task::kMulticlass, 3},
  };
  // More rows than one chunk (64) and a pick that runs up to the shard's last row, so the
  // prefetch of rows ahead reaches the end of the pick.
  constexpr Eigen::Index kRows = 300;
  for (const auto& c : cases) {
    INFO(c.name);
    auto model = dt::models::make_model(c.spec);
    const auto params = random_params(model->parameter_count(), 5, 0.3);
    const auto shard = random_batch(kRows, 13, c.task, c.classes, 11);
    std::vector<std::uint64_t> pick;
    for (std::uint64_t i = 0; i < 150; ++i) pick.push_back((i * 97 + 13) % kRows);
    pick.push_back(kRows - 1);

    RowMatrix x(static_cast<Eigen::Index>(pick.size()), 13);
    Eigen::VectorXd y(static_cast<Eigen::Index>(pick.size()));
    for (std::size_t i = 0; i < pick.size(); ++i) {
      x.row(static_cast<Eigen::Index>(i)) = shard.x.row(static_cast<Eigen::Index>(pick[i]));
      y(static_cast<Eigen::Index>(i)) = shard.y(static_cast<Eigen::Index>(pick[i]));
    }
    std::vector<double> by_hand(params.size(), 0.0);
    const BatchResult expected = model->loss_and_gradient(params, x, y, by_hand);

    std::vector<double> picked(params.size(), 0.0);
    const BatchResult got =
        model->batch_loss_and_gradient(params, BatchRows{shard.x, shard.y, pick}, picked);
    CHECK(same_bits(got.loss_sum, expected.loss_sum));
    CHECK(got.correct == expected.correct);
    CHECK(same_bits(picked, by_hand));

    // Without a pick, the batch is every row of x in order.
    std::vector<double> whole(params.size(), 0.0);
    const BatchResult all = model->batch_loss_and_gradient(params, BatchRows{x, y, {}}, whole);
    CHECK(same_bits(all.loss_sum, expected.loss_sum));
    CHECK(same_bits(whole, by_hand));
  }
}

TEST_CASE("models: a pick outside the shard is refused, naming the row") {
  auto model = dt::models::make_model(spec_of(ModelType::kLinearRegression, 3));
  const auto params = random_params(model->parameter_count(), 1, 0.3);
  const auto shard = random_batch(10, 3, Task::kRegression, 0, 2);
  const std::vector<std::uint64_t> pick = {0, 10};
  std::vector<double> grad(params.size(), 0.0);
  CHECK_THROWS_WITH_AS(model->batch_loss_and_gradient(params, BatchRows{shard.x, shard.y, pick}, grad),
                       "the batch picks row 10 of a shard of 10 rows", dt::TrainingError);
}

TEST_CASE("row warmer: a picked batch is asked for a slice at a time, then nothing is left") {
  // Prefetches change no value, so what can be checked is the walk: every row once, in slices
  // of kSliceRows, nothing after the end or after disarm, nothing for a batch in order, a
  // sparse one or an empty one.
  RowMatrix x = RowMatrix::Constant(50, 7, 1.0);
  const Eigen::VectorXd y = Eigen::VectorXd::Zero(50);
  const std::vector<std::uint64_t> pick{49, 3, 17, 0, 25, 8, 33, 41, 12, 2,
                                        48, 30, 7, 19, 22, 1, 44, 36, 10};
  dt::models::RowWarmer warmer;
  constexpr auto kSlice = static_cast<std::uint64_t>(dt::models::RowWarmer::kSliceRows);
  CHECK_FALSE(warmer.slice());
  warmer.arm(BatchRows{x, y, pick});
  CHECK(warmer.pending());
  CHECK(warmer.slice());
  CHECK(warmer.rows_warmed() == kSlice);
  CHECK(warmer.slice());
  CHECK(warmer.rows_warmed() == pick.size());
  CHECK_FALSE(warmer.pending());
  CHECK_FALSE(warmer.slice());
  warmer.arm(BatchRows{x, y, pick});
  CHECK(warmer.slice());
  warmer.disarm();
  CHECK_FALSE(warmer.slice());
  CHECK(warmer.rows_warmed() == pick.size() + kSlice);
  warmer.arm(BatchRows{x.middleRows(10, 40), y.segment(10, 40), {}});  // in order: left alone
  CHECK_FALSE(warmer.slice());
  const dt::models::CsrView sparse{};
  warmer.arm(BatchRows{x, y, pick, &sparse});
  CHECK_FALSE(warmer.slice());
  warmer.arm(BatchRows{x.middleRows(0, 0), y.segment(0, 0), {}});
  CHECK_FALSE(warmer.slice());
}
