// Sparse models (core/models/sparse_model.hpp): the same loss, gradient, metrics and predictions
// as the dense model on the dense matrix of the same rows (the same bits with ascending distinct
// keys), gradients against central finite differences, lazy L2, the factory's refusals.

#include "core/models/sparse_model.hpp"
#include "core/models/model.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"
#include "tests/unit/sparse_rows.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using dt::config::ModelType;
using dt::config::Task;
using dt::models::BatchResult;
using dt::models::ModelSpec;
using dt::models::RowMatrix;
using dt::models::SparseBatch;
using dt::test::random_sparse;
using dt::test::spec_of;
using dt::test::SparseRows;

struct Case {
  const char* name;
  ModelSpec spec;
  Task task;
  int classes;
};

std::vector<Case> cases(int width, double l2 = 0.0) {
  return {
      {"linear", spec_of(ModelType::kLinearRegression, width, 0, {}, {}, Task::kRegression, l2),
       Task::kRegression, 0},
      {"logistic", spec_of(ModelType::kLogisticRegression, width, 0, {}, {}, Task::kBinary, l2),
       Task::kBinary, 0},
      {"softmax", spec_of(ModelType::kSoftmaxRegression, width, 4, {}, {}, Task::kMulticlass, l2),
       Task::kMulticlass, 4},
  };
}

// A case's rows (seed `seed`), its dense and sparse model, and full parameters (seed + 1).
struct Pair {
  SparseRows s;
  std::unique_ptr<dt::models::Model> dense;
  std::unique_ptr<dt::models::SparseModel> sparse;
  std::vector<double> full;
};

Pair pair_of(const Case& c, std::size_t rows, std::uint64_t seed, bool repeats = false) {
  Pair p{random_sparse(rows, 50, 5, c.task, c.classes, seed, repeats),
         dt::models::make_model(c.spec), dt::models::make_sparse_model(c.spec), {}};
  p.full = dt::test::random_params(p.dense->parameter_count(), seed + 1, 0.5);
  return p;
}

// The sparse step's gradient, scattered into a full-size vector.
std::vector<double> sparse_full_gradient(dt::models::SparseModel& model,
                                         const std::vector<double>& full, const SparseRows& s,
                                         const std::vector<std::uint64_t>& pick,
                                         BatchResult& result) {
  SparseBatch batch;
  compact(s.view(), pick, batch);
  std::vector<double> local;
  dt::models::gather_params(full, batch, model.outputs(), local);
  std::vector<double> y;
  for (std::size_t i = 0; i < batch.rows(); ++i) {
    y.push_back(s.y(static_cast<Eigen::Index>(pick.empty() ? i : pick[i])));
  }
  std::vector<double> grad(local.size(), 0.0);
  result = model.loss_and_gradient(local, batch, y, grad);
  std::vector<double> out(full.size(), 0.0);
  dt::models::add_gradient(grad, batch, model.outputs(), out);
  return out;
}

}  // namespace

TEST_CASE("sparse models: the dense model's loss, metrics and gradient, bit for bit") {
  // 150 rows: several chunks of 64 (softmax) and of 8 (single output), a last group of four
  // rows cut short, empty rows; width 50 with ~5 nonzeros a row: many keys shared in a group.
  for (const auto& c : cases(50)) {
    CAPTURE(c.name);
    auto [s, dense, sparse, full] = pair_of(c, 150, 21);
    REQUIRE(sparse->parameter_count() == dense->parameter_count());
    std::vector<double> dense_grad(full.size(), 0.0);
    const BatchResult want = dense->loss_and_gradient(full, s.dense, s.y, dense_grad);
    BatchResult got;
    CHECK(sparse_full_gradient(*sparse, full, s, {}, got) == dense_grad);
    CHECK(got.loss_sum == want.loss_sum);
    CHECK(got.correct == want.correct);
    CHECK(got.squared_error_sum == want.squared_error_sum);

    // Picked rows, as a shuffled epoch gives them: the dense model's picked batch.
    std::vector<std::uint64_t> pick;
    for (std::uint64_t i = 0; i < 150; ++i) pick.push_back((i * 37 + 5) % 150);
    pick.resize(101);
    std::vector<double> dense_picked(full.size(), 0.0);
    const BatchResult want_picked = dense->batch_loss_and_gradient(
        full, dt::models::BatchRows{s.dense, s.y, pick}, dense_picked);
    CHECK(sparse_full_gradient(*sparse, full, s, pick, got) == dense_picked);
    CHECK(got.loss_sum == want_picked.loss_sum);
    CHECK(got.correct == want_picked.correct);
  }
}

TEST_CASE("sparse models: evaluate and predict give the dense model's figures") {
  for (const auto& c : cases(50)) {
    CAPTURE(c.name);
    auto [s, dense, sparse, full] = pair_of(c, 70, 23);
    SparseBatch batch;
    compact(s.view(), {}, batch);
    std::vector<double> local;
    dt::models::gather_params(full, batch, sparse->outputs(), local);
    const std::vector<double> y(s.y.data(), s.y.data() + s.y.size());
    const BatchResult got = sparse->evaluate(local, batch, y);
    const BatchResult want = dense->evaluate(full, s.dense, s.y);
    CHECK(got.loss_sum == want.loss_sum);
    CHECK(got.correct == want.correct);
    RowMatrix p_sparse;
    RowMatrix p_dense;
    sparse->predict(local, batch, p_sparse);
    dense->predict(full, s.dense, p_dense);
    CHECK(p_sparse == p_dense);
    CHECK(p_sparse.cols() == sparse->outputs());
  }
}

TEST_CASE("sparse models: a repeated key in a row adds up, equal to the dense sum to rounding") {
  // Unsorted keys and a key twice a row: the sums run in another order than the dense kernel's,
  // so the figures agree to rounding (relative 1e-12: a few ulps of sums of ~10 terms) only.
  for (const auto& c : cases(50)) {
    CAPTURE(c.name);
    auto [s, dense, sparse, full] = pair_of(c, 45, 25, true);
    std::vector<double> dense_grad(full.size(), 0.0);
    const BatchResult want = dense->loss_and_gradient(full, s.dense, s.y, dense_grad);
    BatchResult got;
    const auto grad = sparse_full_gradient(*sparse, full, s, {}, got);
    CHECK(got.loss_sum == doctest::Approx(want.loss_sum).epsilon(1e-12));
    for (std::size_t i = 0; i < grad.size(); ++i) {
      CHECK(dt::test::close(grad[i], dense_grad[i], 1e-12));
    }
  }
}

TEST_CASE("sparse models: gradients match central finite differences") {
  for (const auto& c : cases(30)) {
    CAPTURE(c.name);
    const auto s = random_sparse(25, 30, 4, c.task, c.classes, 27, true);
    auto model = dt::models::make_sparse_model(c.spec);
    SparseBatch batch;
    compact(s.view(), {}, batch);
    const auto local = dt::test::random_params(model->local_count(batch), 28, 0.5);
    const std::vector<double> y(s.y.data(), s.y.data() + s.y.size());
    std::vector<double> grad(local.size(), 0.25);  // the gradient is ADDED
    (void)model->loss_and_gradient(local, batch, y, grad);
    constexpr double h = 1e-6;
    auto p = local;
    for (std::size_t i = 0; i < local.size(); ++i) {
      p[i] = local[i] + h;
      const double up = model->evaluate(p, batch, y).loss_sum;
      p[i] = local[i] - h;
      const double down = model->evaluate(p, batch, y).loss_sum;
      p[i] = local[i];
      CAPTURE(i);
      CHECK(dt::test::close(grad[i] - 0.25, (up - down) / (2.0 * h), 1e-6));
    }
  }
}

TEST_CASE("sparse models: lazy L2 covers the batch keys' weights only, never the biases") {
  for (const auto& c : cases(50, 0.3)) {
    CAPTURE(c.name);
    const auto s = random_sparse(6, 50, 5, c.task, c.classes, 29);
    auto model = dt::models::make_sparse_model(c.spec);
    auto dense = dt::models::make_model(c.spec);
    SparseBatch batch;
    compact(s.view(), {}, batch);
    REQUIRE(batch.keys.size() < 50);  // some weights are not the batch's
    const auto full = dt::test::random_params(model->parameter_count(), 30, 0.5);
    std::vector<double> local;
    dt::models::gather_params(full, batch, model->outputs(), local);
    const std::size_t weights = batch.keys.size() * model->outputs();
    double sum = 0.0;
    for (std::size_t i = 0; i < weights; ++i) sum += local[i] * local[i];
    CHECK(model->regularization(local, batch) == doctest::Approx(0.5 * 0.3 * sum));
    CHECK(model->regularization(local, batch) < dense->regularization(full));
    std::vector<double> grad(local.size(), 0.0);
    model->add_regularization_gradient(local, batch, grad);
    for (std::size_t i = 0; i < local.size(); ++i) {
      CHECK(grad[i] == (i < weights ? 0.3 * local[i] : 0.0));
    }
  }
}

TEST_CASE("sparse models: an empty batch, and a batch of empty rows, fit the bias only") {
  auto model = dt::models::make_sparse_model(cases(50)[1].spec);
  const auto s = random_sparse(20, 50, 5, Task::kBinary, 0, 31);
  SparseBatch batch;
  compact(s.view(), std::vector<std::uint64_t>{3, 10}, batch);  // two empty rows
  const std::vector<double> local{0.0};  // the bias
  const std::vector<double> y{1.0, 0.0};
  std::vector<double> grad{0.0};
  const BatchResult r = model->loss_and_gradient(local, batch, y, grad);
  CHECK(r.loss_sum == doctest::Approx(2.0 * std::log(2.0)));
  CHECK(grad[0] == doctest::Approx(0.0));  // 0.5 - 1 + 0.5 - 0
  SparseBatch none;
  const std::vector<std::uint64_t> starts{0};
  compact(dt::models::CsrView{50, starts, {}, {}}, {}, none);
  CHECK(model->loss_and_gradient(local, none, {}, grad).loss_sum == 0.0);
  RowMatrix out;
  model->predict(local, none, out);
  CHECK(out.rows() == 0);
}

TEST_CASE("sparse models: the factory refuses the mlp and bad specs; sizes are checked") {
  CHECK(dt::test::message_of<dt::TrainingError>([] {
          (void)dt::models::make_sparse_model(spec_of(ModelType::kMlp, 50, 0, {8}));
        }) == "mlp has no sparse form: sparse rows train linear_regression, logistic_regression "
              "or softmax_regression (or give the mlp dense input)");
  CHECK(dt::test::message_of<dt::TrainingError>([] {
          (void)dt::models::make_sparse_model(
              spec_of(ModelType::kSoftmaxRegression, 50, 1, {}, {}, Task::kMulticlass));
        }).find("needs at least 2 classes, got 1") != std::string::npos);
  auto model = dt::models::make_sparse_model(cases(50)[0].spec);
  const auto s = random_sparse(10, 50, 5, Task::kRegression, 0, 32);
  SparseBatch batch;
  compact(s.view(), {}, batch);
  const std::vector<double> y(10, 0.0);
  std::vector<double> local(model->local_count(batch), 0.0);
  std::vector<double> short_grad(3, 0.0);
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)model->loss_and_gradient(local, batch, y, short_grad);
        }).find("the local gradient has 3 values") == 0);
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)model->evaluate(local, batch, std::vector<double>(4, 0.0));
        }) == "the batch has 10 rows but 4 labels");
  auto narrow = dt::models::make_sparse_model(cases(20)[0].spec);
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)narrow->evaluate(local, batch, y);
        }).find("but the model's width is 20") != std::string::npos);
}

TEST_CASE("sparse models: a model's batch of sparse rows trains as its dense rows do") {
  // Model::batch_loss_and_gradient with BatchRows::sparse set (what every mode with a dense
  // exchange calls on a sparse shard): the dense batch's bits, picked or whole; 0 rows: nothing.
  for (const auto& c : cases(50)) {
    CAPTURE(c.name);
    auto [s, dense, sparse, full] = pair_of(c, 150, 31);
    const auto view = s.view();
    const dt::models::RowMatrix no_columns(150, 0);
    std::vector<std::uint64_t> pick;
    for (std::uint64_t i = 0; i < 150; ++i) pick.push_back((i * 41 + 3) % 150);
    pick.resize(77);
    for (const auto& p : {std::vector<std::uint64_t>{}, pick}) {
      std::vector<double> want(full.size(), 0.0);
      const auto w = dense->batch_loss_and_gradient(full, {s.dense, s.y, p}, want);
      std::vector<double> got(full.size(), 0.0);
      const auto g = dense->batch_loss_and_gradient(full, {no_columns, s.y, p, &view}, got);
      CHECK(got == want);
      CHECK(g.loss_sum == w.loss_sum);
      CHECK(g.correct == w.correct);
    }
    std::vector<double> untouched(full.size(), 0.0);
    const auto none = dense->batch_loss_and_gradient(
        full, {no_columns.topRows(0), s.y.head(0), {}, &view}, untouched);
    CHECK(none.loss_sum == 0.0);
    CHECK(untouched == std::vector<double>(full.size(), 0.0));
  }
}

TEST_CASE("sparse models: implicit ones (CsrView::ones) give the bits of stored values") {
  // A hashed click log's values are 1.0 but where two columns of a row share a key (2.0): its
  // OnesView marks those rows, a batch without them is compacted without values and every
  // kernel skips the multiply; a batch with one gets every value. The same bits as the stored
  // values, and as the dense model on the same matrix; -0.0 among the parameters.
  for (const auto& c : cases(50)) {
    CAPTURE(c.name);
    auto [s, dense, sparse, full] = pair_of(c, 150, 29);
    for (auto& v : s.values) v = 1.0;
    s.dense = (s.dense.array() != 0.0).cast<double>();
    const std::uint64_t other = 11;  // row 11's second key: a collision's 2.0
    REQUIRE(s.row_start[other + 1] - s.row_start[other] >= 2);
    s.values[s.row_start[other] + 1] = 2.0;
    s.dense(static_cast<Eigen::Index>(other), s.keys[s.row_start[other] + 1]) = 2.0;
    full[3] = -0.0;
    dt::models::OnesView marks;
    const auto& view = marks.view(s.width, s.row_start, s.keys, s.values);
    REQUIRE(view.ones);
    REQUIRE(view.other_rows.size() == 3);  // 150 rows
    CHECK(view.other_rows[0] == std::uint64_t{1} << other);
    CHECK(&marks.view(s.width, s.row_start, s.keys, s.values) == &view);
    auto implicit = dt::models::make_sparse_model(c.spec);
    std::vector<std::uint64_t> pick;
    for (std::uint64_t i = 0; i < 150; ++i) pick.push_back((i * 37 + 5) % 150);
    std::vector<std::uint64_t> without(pick);
    std::erase(without, other);
    for (const auto& rows : {pick, without}) {
      const bool ones_batch = rows.size() == without.size();
      CAPTURE(ones_batch);
      SparseBatch stored;
      SparseBatch ones;
      compact(s.view(), rows, stored);
      compact(view, rows, ones);
      CHECK(ones.ones == ones_batch);
      CHECK(ones.values.empty() == ones_batch);
      if (!ones_batch) CHECK(ones.values == stored.values);
      CHECK_FALSE(stored.ones);
      CHECK(ones.keys == stored.keys);
      CHECK(ones.local == stored.local);
      CHECK(ones.row_start == stored.row_start);
      std::vector<double> local;
      dt::models::gather_params(full, stored, sparse->outputs(), local);
      std::vector<double> y;
      for (const std::uint64_t r : rows) y.push_back(s.y(static_cast<Eigen::Index>(r)));
      std::vector<double> grad_stored(local.size(), 0.0);
      std::vector<double> grad_ones(local.size(), 0.0);
      const BatchResult a = sparse->loss_and_gradient(local, stored, y, grad_stored);
      const BatchResult b = implicit->loss_and_gradient(local, ones, y, grad_ones);
      CHECK(std::memcmp(grad_ones.data(), grad_stored.data(), grad_ones.size() * 8) == 0);
      CHECK(a.loss_sum == b.loss_sum);
      CHECK(a.correct == b.correct);
      RowMatrix p_stored;
      RowMatrix p_ones;
      sparse->predict(local, stored, p_stored);
      implicit->predict(local, ones, p_ones);
      CHECK(p_ones == p_stored);
      std::vector<double> dense_grad(full.size(), 0.0);
      const BatchResult want = dense->batch_loss_and_gradient(
          full, dt::models::BatchRows{s.dense, s.y, rows}, dense_grad);
      std::vector<double> scattered(full.size(), 0.0);
      dt::models::add_gradient(grad_ones, ones, sparse->outputs(), scattered);
      CHECK(scattered == dense_grad);
      CHECK(b.loss_sum == want.loss_sum);
    }
  }
}

TEST_CASE("sparse models: OnesView marks rows with any value other than 1.0, and no others") {
  dt::test::SparseRows s;
  s.width = 100;
  for (std::uint32_t r = 0; r < 70; ++r) {  // two words of marks, the second partly used
    for (std::uint32_t j = 0; j < 9; ++j) {  // an eight-wide block and a tail
      s.keys.push_back(j * 10 + r % 10);
      s.values.push_back(1.0);
    }
    s.row_start.push_back(s.keys.size());
  }
  const std::vector<std::uint64_t> no_marks;
  {
    dt::models::OnesView marks;
    const auto& v = marks.view(s.width, s.row_start, s.keys, s.values);
    CHECK(v.ones);
    CHECK(v.other_rows.empty());  // every value 1.0: nothing to test a row against
  }
  const double others[] = {2.0, 0.0, -1.0, std::nextafter(1.0, 2.0), std::nan("")};
  for (const std::uint64_t row : {0UL, 63UL, 64UL, 69UL}) {
    for (const std::uint64_t j : {0UL, 7UL, 8UL}) {
      for (const double bad : others) {
        CAPTURE(row);
        CAPTURE(j);
        CAPTURE(bad);
        auto values = s.values;
        values[row * 9 + j] = bad;
        dt::models::OnesView marks;
        const auto& v = marks.view(s.width, s.row_start, s.keys, values);
        REQUIRE(v.other_rows.size() == 2);
        CHECK(v.other_rows[row / 64] == std::uint64_t{1} << (row % 64));
        CHECK(v.other_rows[1 - row / 64] == 0);
      }
    }
  }
  {
    // More than 1 row in 16 with other values (LIBSVM's real values): a plain view, read once.
    auto values = s.values;
    for (std::size_t r = 0; r < 5; ++r) values[r * 9] = 2.0;  // 5 of 70: above 70 / 16
    dt::models::OnesView marks;
    CHECK_FALSE(marks.view(s.width, s.row_start, s.keys, values).ones);
    values[4 * 9] = 1.0;  // 4 of 70: marks
    dt::models::OnesView fewer;
    CHECK(fewer.view(s.width, s.row_start, s.keys, values).ones);
  }
  // Arrays that are not CSR get a plain view (compact reports them), never marks.
  dt::models::OnesView marks;
  const std::vector<double> short_values(s.values.begin(), s.values.end() - 1);
  CHECK_FALSE(marks.view(s.width, s.row_start, s.keys, short_values).ones);
}
