// Tensor-parallel slices: T = 2 and T = 3 slices, run as threads of one process with an
// all-reduce over shared memory, give the unsplit model's loss and (mapped back) its full
// gradient, for every model, task and activation, with feature counts and hidden widths that T
// does not divide. Also: the full <-> slice mapping, ranges, and the split errors.

#include "core/models/tensor.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <exception>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using dt::config::Activation;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::BatchResult;
using dt::models::GroupAllReduce;
using dt::models::ModelSpec;
using dt::models::TensorSlice;
using dt::test::random_batch;
using dt::test::random_params;
using dt::test::spec_of;

// T threads summing in place: every rank adds the T buffers in rank order (so every rank gets
// the same bits), then all write back. Two barriers: posted, and read by all before anyone
// overwrites its buffer.
class LocalGroup {
 public:
  explicit LocalGroup(int tensor)
      : tensor_(tensor), barrier_(tensor), posted_(static_cast<std::size_t>(tensor)) {}

  [[nodiscard]] GroupAllReduce member(int rank) {
    return [this, rank](std::span<double> values) {
      posted_[static_cast<std::size_t>(rank)] = values;
      barrier_.arrive_and_wait();
      std::vector<double> sum(values.size(), 0.0);
      for (int r = 0; r < tensor_; ++r) {
        const auto other = posted_[static_cast<std::size_t>(r)];
        REQUIRE(other.size() == values.size());
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
      }
      ++calls_[static_cast<std::size_t>(rank)];
      barrier_.arrive_and_wait();
      std::copy(sum.begin(), sum.end(), values.begin());
    };
  }
  [[nodiscard]] int calls(int rank) const { return calls_[static_cast<std::size_t>(rank)]; }

 private:
  int tensor_;
  std::barrier<> barrier_;
  std::vector<std::span<double>> posted_;
  std::vector<int> calls_ = std::vector<int>(8, 0);
};

using dt::test::close;

struct SliceRun {
  std::vector<BatchResult> results;       // per rank
  std::vector<BatchResult> evaluations;   // per rank
  std::vector<double> full_gradient;      // owned slice gradients mapped back
  std::vector<int> all_reduces;           // per rank, during loss_and_gradient + evaluate
};

// Runs loss_and_gradient and evaluate on T slices in T threads.
SliceRun run_slices(const ModelSpec& spec, int tensor, const std::vector<double>& full_params,
                    const dt::test::Batch& batch) {
  SliceRun out;
  out.results.resize(static_cast<std::size_t>(tensor));
  out.evaluations.resize(static_cast<std::size_t>(tensor));
  std::vector<std::vector<double>> grads(static_cast<std::size_t>(tensor));
  std::vector<std::unique_ptr<TensorSlice>> slices;
  for (int t = 0; t < tensor; ++t) slices.push_back(dt::models::make_tensor_slice(spec, tensor, t));
  LocalGroup group(tensor);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(tensor));
  std::vector<std::thread> threads;
  for (int t = 0; t < tensor; ++t) {
    threads.emplace_back([&, t] {
      const auto ut = static_cast<std::size_t>(t);
      try {
        TensorSlice& slice = *slices[ut];
        std::vector<double> params(slice.size());
        slice.gather(full_params, params);
        grads[ut].assign(slice.size(), 0.0);
        const auto cols = slice.features();
        const auto x = batch.x.middleCols(cols.begin, cols.size());
        const auto reduce = group.member(t);
        out.results[ut] = slice.loss_and_gradient(params, x, batch.y, grads[ut], reduce);
        out.evaluations[ut] = slice.evaluate(params, x, batch.y, reduce);
      } catch (...) {
        errors[ut] = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  out.full_gradient.assign(full_params.size(), 0.0);
  for (int t = 0; t < tensor; ++t) {
    const auto& g = grads[static_cast<std::size_t>(t)];
    const auto& slice = *slices[static_cast<std::size_t>(t)];
    slice.add_owned(std::span<const double>(g).first(slice.owned()), out.full_gradient);
    out.all_reduces.push_back(group.calls(t));
  }
  return out;
}

void check_equivalence(const ModelSpec& spec, std::uint64_t seed) {
  auto model = dt::models::make_model(spec);
  const auto params = random_params(model->parameter_count(), seed, 0.7);
  for (const int tensor : {2, 3}) {
    CAPTURE(tensor);
    // Larger batch then smaller: the scratch reuse is checked too.
    for (const Eigen::Index rows : {9, 4}) {
      CAPTURE(rows);
      const auto batch = random_batch(rows, spec.inputs, model->task(), spec.classes, seed + 1);
      std::vector<double> grad(params.size(), 0.0);
      const BatchResult whole = model->loss_and_gradient(params, batch.x, batch.y, grad);
      const SliceRun split = run_slices(spec, tensor, params, batch);
      for (int t = 0; t < tensor; ++t) {
        CAPTURE(t);
        const auto& r = split.results[static_cast<std::size_t>(t)];
        // Every rank computes the head on the same all-reduced outputs: the same bits.
        CHECK(r.loss_sum == split.results[0].loss_sum);
        CHECK(close(r.loss_sum, whole.loss_sum, 1e-12));
        CHECK(r.correct == whole.correct);
        CHECK(close(r.squared_error_sum, whole.squared_error_sum, 1e-12));
        CHECK(split.evaluations[static_cast<std::size_t>(t)].loss_sum == r.loss_sum);
      }
      int bad = 0;
      for (std::size_t k = 0; k < grad.size(); ++k) {
        if (!close(split.full_gradient[k], grad[k], 1e-12)) {
          ++bad;
          INFO("parameter ", k, ": split ", split.full_gradient[k], " whole ", grad[k]);
          CHECK(close(split.full_gradient[k], grad[k], 1e-12));
        }
      }
      CHECK(bad == 0);
      // The all-reduces per step (forward + backward) and per evaluation, from tensor.hpp: one
      // for the linear models; for the mlp one per pair forward and one per pair but the first
      // backward.
      int expected = 2;  // linear: one in loss_and_gradient, one in evaluate
      if (spec.config.type == ModelType::kMlp) {
        const int pairs = static_cast<int>(spec.config.hidden.size() + 1) / 2;
        expected = pairs + (pairs - 1) + pairs;
      }
      for (const int calls : split.all_reduces) CHECK(calls == expected);
    }
  }
}

}  // namespace

TEST_CASE("tensor: split_range cuts contiguous parts whose sizes differ by at most one") {
  using dt::models::split_range;
  CHECK(split_range(7, 3, 0).begin == 0);
  CHECK(split_range(7, 3, 0).end == 3);
  CHECK(split_range(7, 3, 1).begin == 3);
  CHECK(split_range(7, 3, 1).end == 5);
  CHECK(split_range(7, 3, 2).begin == 5);
  CHECK(split_range(7, 3, 2).end == 7);
  for (int parts = 1; parts <= 5; ++parts) {
    for (std::int64_t count = parts; count <= 12; ++count) {
      std::int64_t next = 0;
      for (int p = 0; p < parts; ++p) {
        const auto r = split_range(count, parts, p);
        CHECK(r.begin == next);
        CHECK((r.size() == count / parts || r.size() == count / parts + 1));
        next = r.end;
      }
      CHECK(next == count);
    }
  }
}

TEST_CASE("tensor: convex model slices equal the unsplit model (features not divisible by T)") {
  SUBCASE("linear_regression") { check_equivalence(spec_of(ModelType::kLinearRegression, 7), 21); }
  SUBCASE("logistic_regression") {
    check_equivalence(spec_of(ModelType::kLogisticRegression, 7), 22);
  }
  SUBCASE("softmax_regression") {
    check_equivalence(spec_of(ModelType::kSoftmaxRegression, 7, 4), 23);
  }
  SUBCASE("one feature per rank") {
    check_equivalence(spec_of(ModelType::kSoftmaxRegression, 3, 3), 24);
  }
}

TEST_CASE("tensor: mlp slices equal the unsplit model for every activation, task and depth") {
  std::uint64_t seed = 300;
  for (const auto activation : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    for (const auto task : {Task::kRegression, Task::kBinary, Task::kMulticlass}) {
      // One pair; a pair plus a replicated output layer; two pairs; two pairs plus a replicated
      // output layer. Split widths 5 and 7 are not divisible by 2 or 3; replicated hidden layers
      // may be narrower than T.
      for (const auto& hidden : {std::vector<int>{5}, std::vector<int>{5, 4},
                                 std::vector<int>{7, 2, 5}, std::vector<int>{5, 1, 7, 3}}) {
        INFO("activation ", dt::config::name_of(activation), " task ", static_cast<int>(task),
             " hidden layers ", hidden.size());
        const int classes = task == Task::kMulticlass ? 3 : 0;
        check_equivalence(spec_of(ModelType::kMlp, 4, classes, hidden, activation, task), ++seed);
      }
    }
  }
}

TEST_CASE("tensor: the owned parts of the slices partition the full parameter vector") {
  for (const auto& spec :
       {spec_of(ModelType::kLinearRegression, 5), spec_of(ModelType::kSoftmaxRegression, 5, 3),
        spec_of(ModelType::kMlp, 4, 3, {5, 4}, Activation::kTanh, Task::kMulticlass),
        spec_of(ModelType::kMlp, 4, 0, {7, 2, 5}, Activation::kRelu, Task::kBinary)}) {
    const auto p = dt::models::make_model(spec)->parameter_count();
    std::vector<double> full(p);
    std::iota(full.begin(), full.end(), 0.0);
    for (const int tensor : {1, 2, 3}) {
      CAPTURE(tensor);
      std::vector<double> rebuilt(p, -1.0);
      std::vector<double> covered(p, 0.0);
      std::size_t owned = 0;
      for (int t = 0; t < tensor; ++t) {
        const auto slice = dt::models::make_tensor_slice(spec, tensor, t);
        std::vector<double> values(slice->size());
        slice->gather(full, values);
        const auto mine = std::span<const double>(values).first(slice->owned());
        slice->scatter(mine, rebuilt);
        slice->add_owned(std::vector<double>(slice->owned(), 1.0), covered);
        owned += slice->owned();
        if (t == 0) CHECK(slice->owned() == slice->size());  // rank 0 owns what it reads
      }
      CHECK(owned == p);
      CHECK(rebuilt == full);
      CHECK(std::all_of(covered.begin(), covered.end(), [](double c) { return c == 1.0; }));
    }
  }
}

TEST_CASE("tensor: a linear slice holds its feature rows of W and rank 0 the bias") {
  // softmax, 5 features, K = 2, T = 2: rank 0 features 0..2 (W rows 0-2) + bias, rank 1 3..4.
  const auto spec = spec_of(ModelType::kSoftmaxRegression, 5, 2);
  const auto s0 = dt::models::make_tensor_slice(spec, 2, 0);
  const auto s1 = dt::models::make_tensor_slice(spec, 2, 1);
  CHECK(s0->features().begin == 0);
  CHECK(s0->features().end == 3);
  CHECK(s1->features().begin == 3);
  CHECK(s1->features().end == 5);
  std::vector<double> full(12);
  std::iota(full.begin(), full.end(), 0.0);  // W = 0..9, b = 10, 11
  std::vector<double> v0(s0->size()), v1(s1->size());
  s0->gather(full, v0);
  s1->gather(full, v1);
  CHECK(v0 == std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11});
  CHECK(v1 == std::vector<double>{6, 7, 8, 9});
}

TEST_CASE("tensor: an mlp column layer takes its units' columns, the next layer their rows") {
  // inputs 2, hidden [3], 1 output, T = 2: rank 0 units 0-1, rank 1 unit 2.
  // Full layout: W0 [2 x 3] = 0..5, b0 = 6..8, W1 [3 x 1] = 9..11, b1 = 12.
  const auto spec = spec_of(ModelType::kMlp, 2, 0, {3});
  const auto s0 = dt::models::make_tensor_slice(spec, 2, 0);
  const auto s1 = dt::models::make_tensor_slice(spec, 2, 1);
  std::vector<double> full(13);
  std::iota(full.begin(), full.end(), 0.0);
  std::vector<double> v0(s0->size()), v1(s1->size());
  s0->gather(full, v0);
  s1->gather(full, v1);
  CHECK(v0 == std::vector<double>{0, 1, 3, 4, 6, 7, 9, 10, 12});
  CHECK(v1 == std::vector<double>{2, 5, 8, 11});
  CHECK(s1->features().size() == 2);  // the mlp reads every feature
}

TEST_CASE("tensor: a replicated output layer is read by every rank and owned by rank 0") {
  // inputs 1, hidden [2, 1], 1 output, T = 2. Full: W0 0-1, b0 2-3, W1 4-5, b1 6, W2 7, b2 8.
  const auto spec = spec_of(ModelType::kMlp, 1, 0, {2, 1});
  const auto s1 = dt::models::make_tensor_slice(spec, 2, 1);
  std::vector<double> full(9);
  std::iota(full.begin(), full.end(), 0.0);
  std::vector<double> v1(s1->size());
  s1->gather(full, v1);
  CHECK(v1 == std::vector<double>{1, 3, 5, 7, 8});
  CHECK(s1->owned() == 3);
}

TEST_CASE("tensor: splits that cannot work are errors that name the keys") {
  using dt::models::check_tensor_split;
  dt::config::ModelConfig linear;
  linear.type = ModelType::kLogisticRegression;
  CHECK(dt::test::data_error([&] { check_tensor_split(linear, 2, 3); }) ==
        "parallelism.tensor = 3 splits logistic_regression by input feature, but the data has "
        "only 2 feature columns; use parallelism.tensor <= 2");
  CHECK(dt::test::data_error([&] { check_tensor_split(linear, 1, 2); }) ==
        "parallelism.tensor = 2 splits logistic_regression by input feature, but the data has "
        "only 1 feature column; use parallelism.tensor <= 1");
  check_tensor_split(linear, 3, 3);

  dt::config::ModelConfig mlp;
  mlp.type = ModelType::kMlp;
  mlp.hidden = {8, 1, 2};
  CHECK(dt::test::message_of<dt::ConfigError>([&] { check_tensor_split(mlp, 4, 3); }) ==
        "parallelism.tensor = 3 splits mlp hidden layer 2 (model.hidden[2]) into 3 parts, but it "
        "has only 2 units; use parallelism.tensor <= 2 or a wider layer");
  check_tensor_split(mlp, 1, 2);  // layer 1 (replicated) may be narrower than T
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)dt::models::make_tensor_slice(spec_of(ModelType::kLinearRegression, 4), 2, 2);
        }) == "tensor rank 2 is outside [0, 2)");
}

TEST_CASE("tensor: a batch with the wrong columns is refused") {
  const auto slice = dt::models::make_tensor_slice(spec_of(ModelType::kLinearRegression, 5), 2, 1);
  std::vector<double> params(slice->size(), 0.0), grad(slice->size(), 0.0);
  const auto batch = random_batch(3, 5, Task::kRegression, 0, 1);
  const GroupAllReduce none = [](std::span<double>) {};
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)slice->loss_and_gradient(params, batch.x, batch.y, grad, none);
        }) == "tensor rank 1: the batch has 5 feature columns but the slice reads 2");
}
