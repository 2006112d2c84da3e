// `disttrain compare`'s core (core/outputs/compare.hpp): equality within a tolerance, the
// models' largest differences and where they are, the loss curves' divergence step, the config
// keys that differ, the metrics' deltas. Expected values worked out by hand from the texts.

#include "base/error.hpp"
#include "core/outputs/compare.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

namespace {

using dt::output::compare_models;

// A linear model on two features: weights w, bias b.
std::string linear_model(const std::string& w, const std::string& b, const std::string& type = "linear_regression") {
  return R"({"format": "disttrain-model", "version": 1,
  "model": {"type": ")" + type + R"(", "task": "regression", "l2": 0, "inputs": 2, "outputs": 1},
  "features": ["a", "b"], "label": "y",
  "normalization": {"kind": "none", "shift": [0, 0], "scale": [1, 1]},
  "parameters": [{"name": "weights", "shape": [2], "data": [)" + w + R"(]},
                 {"name": "bias", "shape": [], "data": [)" + b + "]}]}";
}

// A sparse block of 1000 x 1 weights (model.json version 2 lists its nonzeros only).
std::string sparse_model(const std::string& index, const std::string& data) {
  return R"({"format": "disttrain-model", "version": 2,
  "model": {"type": "logistic_regression", "task": "binary", "l2": 0, "inputs": 1000, "outputs": 1},
  "label": "y", "classes": ["0", "1"],
  "parameters": [{"name": "weights", "shape": [1000, 1], "encoding": "sparse", "index": [)" +
         index + R"(], "data": [)" + data + R"(]},
                 {"name": "bias", "shape": [1], "data": [0]}]})";
}

const char* const kA = "a/model.json";
const char* const kB = "b/model.json";

}  // namespace

TEST_CASE("compare: equal_within is exact at 0, absolute up to 1 and relative above") {
  using dt::output::equal_within;
  CHECK(equal_within(0.1, 0.1, 0));
  CHECK_FALSE(equal_within(0.1, std::nextafter(0.1, 1.0), 0));
  CHECK(equal_within(0.0, -0.0, 0));
  CHECK(equal_within(NAN, NAN, 0));
  CHECK_FALSE(equal_within(NAN, 1.0, 1e9));
  CHECK(equal_within(0.5, 0.5 + 1e-9, 1e-9));       // |d| = 1e-9 <= 1e-9 x 1
  CHECK_FALSE(equal_within(0.5, 0.5 + 3e-9, 1e-9));
  CHECK(equal_within(1000.0, 1000.0 + 9e-7, 1e-9));  // <= 1e-9 x 1000
  CHECK_FALSE(equal_within(1000.0, 1000.0 + 2e-6, 1e-9));
}

TEST_CASE("compare: a model against itself is equal, every value counted") {
  const auto m = linear_model("1, 2", "0.5");
  const auto c = compare_models(m, m, 0, kA, kB);
  CHECK(c.comparable);
  CHECK(c.equal);
  CHECK(c.values == 7);  // weights 2, bias 1, normalization shift 2 and scale 2
  CHECK(c.differing == 0);
  CHECK_FALSE(c.max_abs.has_value());
}

TEST_CASE("compare: the largest absolute and relative differences, their tensor and index") {
  const auto c = compare_models(linear_model("1, 2", "0.5"), linear_model("1, 2.5", "0.25"), 0, kA, kB);
  REQUIRE(c.comparable);
  CHECK_FALSE(c.equal);
  CHECK(c.differing == 2);
  REQUIRE(c.max_abs.has_value());
  CHECK(c.max_abs->tensor == "weights");
  CHECK(c.max_abs->index == std::vector<std::uint64_t>{1});
  CHECK(c.max_abs->diff == 0.5);
  CHECK(c.max_abs->a == 2.0);
  CHECK(c.max_abs->b == 2.5);
  // Relative: weights[1] 0.5 / 2.5 = 0.2, bias 0.25 / 0.5 = 0.5.
  REQUIRE(c.max_rel.has_value());
  CHECK(c.max_rel->tensor == "bias");
  CHECK(c.max_rel->index.empty());
  CHECK(c.max_rel->diff == 0.5);
  // Within 0.5: 0.5 <= 0.5 x 2.5 and 0.25 <= 0.5 x 1; within 0.1: neither.
  CHECK(compare_models(linear_model("1, 2", "0.5"), linear_model("1, 2.5", "0.25"), 0.5, kA, kB).equal);
  CHECK(compare_models(linear_model("1, 2", "0.5"), linear_model("1, 2.5", "0.25"), 0.1, kA, kB).differing == 2);
}

TEST_CASE("compare: an index in a tensor of two dimensions is [row, column]") {
  const auto model = [](const std::string& data) {
    return R"({"format": "disttrain-model", "version": 1,
      "model": {"type": "softmax_regression", "task": "multiclass", "inputs": 2, "outputs": 3},
      "features": ["a", "b"], "label": "y", "classes": ["x", "y", "z"],
      "parameters": [{"name": "weights", "shape": [2, 3], "data": [)" + data + "]}]}";
  };
  const auto c = compare_models(model("0, 0, 0, 0, 0, 0"), model("0, 0, 0, 0, -3, 0"), 0, kA, kB);
  REQUIRE(c.max_abs.has_value());
  CHECK(c.max_abs->index == std::vector<std::uint64_t>{1, 1});  // flat 4 = row 1, column 1
  CHECK(c.max_abs->diff == 3.0);
}

TEST_CASE("compare: sparse blocks are merged by position, a missing entry being 0") {
  const auto c = compare_models(sparse_model("3, 10", "1, 2"), sparse_model("10, 500", "2, -4"), 0, kA, kB);
  REQUIRE(c.comparable);
  CHECK(c.values == 1001);
  CHECK(c.differing == 2);  // position 3 (1 against 0) and 500 (0 against -4)
  REQUIRE(c.max_abs.has_value());
  CHECK(c.max_abs->index == std::vector<std::uint64_t>{500, 0});
  CHECK(c.max_abs->b == -4.0);
  CHECK(c.tensors[0].sparse);
  CHECK(compare_models(sparse_model("3", "1"), sparse_model("3", "1"), 0, kA, kB).equal);
}

TEST_CASE("compare: models of other types or shapes are not comparable, and say why") {
  const auto c = compare_models(linear_model("1, 2", "0.5"),
                                linear_model("1, 2", "0.5", "logistic_regression"), 0, kA, kB);
  CHECK_FALSE(c.comparable);
  CHECK_FALSE(c.equal);
  CHECK(c.reason == R"(the models differ in type: "linear_regression" against "logistic_regression")");
  const auto dense = compare_models(linear_model("1, 2", "0.5"), sparse_model("3", "1"), 0, kA, kB);
  CHECK_FALSE(dense.comparable);
}

TEST_CASE("compare: a damaged model.json is a DataError naming the file and the field") {
  CHECK_THROWS_WITH_AS((void)compare_models(linear_model("1, 2", "0.5"), "{\"format\": 3", 0, kA, kB),
                       doctest::Contains("b/model.json: not JSON"), dt::DataError);
  CHECK_THROWS_WITH_AS((void)compare_models(linear_model("1, 2, 3", "0.5"), linear_model("1, 2", "0.5"), 0, kA, kB),
                       "a/model.json: parameters[0] (weights) holds 3 values where its shape [2] "
                       "has 2; this is not a model.json that disttrain wrote (damaged or edited): "
                       "run the training again to rewrite it",
                       dt::DataError);
}

TEST_CASE("compare: the loss curves diverge at the first step beyond the tolerance") {
  const std::string header = "step,epoch,seconds,train_loss,validation_loss\n";
  const std::string a = header + "10,0.5,0.1,1.0,\n20,1,0.2,0.5,\n30,1.5,0.3,0.25,\n";
  const std::string b = header + "10,0.5,0.2,1.0,\n20,1,0.4,0.5000001,\n30,1.5,0.6,0.3,\n";
  const auto c = dt::output::compare_losses(a, b, 0, "a", "b");
  CHECK(c.rows_a == 3);
  REQUIRE(c.divergence_step.has_value());
  CHECK(*c.divergence_step == 20);  // the seconds column is not compared
  CHECK(c.column == "train_loss");
  CHECK(c.a_value == "0.5");
  CHECK(c.b_value == "0.5000001");
  CHECK(*dt::output::compare_losses(a, b, 1e-6, "a", "b").divergence_step == 30);
  CHECK_FALSE(dt::output::compare_losses(a, b, 0.1, "a", "b").divergence_step.has_value());
  // A curve that goes on where the other ends diverges at its next step.
  const auto shorter = dt::output::compare_losses(a, header + "10,0.5,0.1,1.0,\n", 0, "a", "b");
  CHECK(*shorter.divergence_step == 20);
  CHECK(shorter.column == "step");
  CHECK_THROWS_WITH_AS((void)dt::output::compare_losses(header + "1e300,0,0,1,\n", a, 0, "a/loss.csv", "b"),
                       doctest::Contains("a/loss.csv: line 2: step '1e300' is not a whole number"),
                       dt::DataError);
  CHECK_THROWS_WITH_AS((void)dt::output::compare_losses("x,y\n", a, 0, "a/loss.csv", "b"),
                       doctest::Contains("a/loss.csv: no step and train_loss columns"), dt::DataError);
}

TEST_CASE("compare: config keys are flattened, and only those that differ are listed") {
  const auto d = dt::output::config_differences(
      "seed: 1\ntraining: {epochs: 2, optimizer: {lr: 0.1}}\nhidden: [8, 4]\n",
      "seed: 2\ntraining: {epochs: 2, optimizer: {lr: 0.1, momentum: 0.9}}\nhidden: [8, 5]\n", "a", "b");
  REQUIRE(d.size() == 3);
  CHECK(d[0].key == "seed");
  CHECK(*d[0].a == "1");
  CHECK(*d[0].b == "2");
  CHECK(d[1].key == "hidden[1]");
  CHECK(d[2].key == "training.optimizer.momentum");
  CHECK_FALSE(d[2].a.has_value());
}

TEST_CASE("compare: final metrics, a null on both sides being equal") {
  const auto a = nlohmann::json::parse(R"({"final_loss": 0.5, "final_metrics": {"accuracy": 0.75, "auc": null}})");
  const auto b = nlohmann::json::parse(R"({"final_loss": 0.5, "final_metrics": {"accuracy": 0.5, "auc": null}})");
  const auto m = dt::output::metric_deltas(a, b, 0);
  REQUIRE(m.size() == 3);
  CHECK(m[0].name == "final_loss");
  CHECK(m[0].equal);
  CHECK(m[1].name == "final_metrics.accuracy");
  CHECK_FALSE(m[1].equal);
  CHECK(m[2].name == "final_metrics.auc");
  CHECK(m[2].equal);
  CHECK(dt::output::metric_deltas(a, b, 0.25)[1].equal);
}
