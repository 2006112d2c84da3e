// model.json of a sparse model (core/outputs/sparse_model_file.hpp): written from a run on sparse
// rows and read back to the same model; malformed files refused; the sparse predictor's numbers
// against the dense model's on the same rows.

#include "base/error.hpp"
#include "core/outputs/inference.hpp"
#include "core/outputs/initial_model.hpp"
#include "core/outputs/run_output.hpp"
#include "core/outputs/sparse_inference.hpp"
#include "core/outputs/sparse_model_file.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using dt::config::ModelType;

dt::data::SparseSource hashed_source() {
  dt::data::SparseSource s;
  s.hash_bits = 4;
  s.hashed = {"C1", "C2"};
  s.crosses = {{"C1", "C2"}};
  s.numeric = {"n"};
  s.width = 17;
  return s;
}

// A run's result on sparse rows: weights with a few nonzeros, then the biases.
dt::roles::RunResult sparse_result(const dt::data::SparseSource& sparse, int outputs,
                                   std::vector<std::string> classes) {
  dt::roles::RunResult r;
  r.status = "ok";
  r.source.sparse = sparse;
  r.source.label = "click";
  r.classes = std::move(classes);
  r.params.assign(sparse.width * static_cast<std::size_t>(outputs) + static_cast<std::size_t>(outputs), 0.0);
  r.params[3] = 1.5;
  r.params[sparse.width * static_cast<std::size_t>(outputs) - 1] = -0.25;
  r.params.back() = 0.125;
  return r;
}

std::string write(ModelType type, const dt::roles::RunResult& r, dt::config::Missing missing) {
  dt::config::Config c;
  c.model.type = type;
  c.data.missing = missing;
  const auto model = dt::models::make_model(
      {c.model, static_cast<int>(r.source.sparse->width), static_cast<int>(r.classes.size())});
  return dt::output::json_text(dt::output::model_json(c, r, *model), 1);
}

// A logistic model over LIBSVM rows of `width` keys, its weights block `weights`, with `sparse`
// as its "sparse" object.
std::string libsvm_model(const std::string& sparse, const std::string& weights,
                         const std::string& extra = "") {
  return R"({"format": "disttrain-model", "version": 2,
  "model": {"type": "logistic_regression", "task": "binary", "l2": 0},)" + extra + R"(
  "sparse": )" + sparse + R"(, "label": "y", "classes": ["0", "1"],
  "parameters": [)" + weights + R"(, {"name": "bias", "shape": [], "data": [0.5]}]})";
}

std::string parse_error(const std::string& text) {
  return dt::test::message_of<dt::DataError>(
      [&] { (void)dt::output::parse_model(text, "model.json"); });
}

}  // namespace

TEST_CASE("sparse model.json: a hashed-CSV run's model read back, nonzero weights only") {
  const auto r = sparse_result(hashed_source(), 1, {"0", "1"});
  const auto text = write(ModelType::kLogisticRegression, r, dt::config::Missing::kZero);
  const auto j = nlohmann::ordered_json::parse(text);  // in the file's order
  CHECK(j.at("version") == 2);
  CHECK_FALSE(j.contains("features"));
  CHECK_FALSE(j.contains("normalization"));
  CHECK(j.at("sparse").dump() ==
        R"({"format":"csv","width":17,"hash_bits":4,"hashed":["C1","C2"],)"
        R"("crosses":[["C1","C2"]],"numeric":["n"],"missing":"zero"})");
  CHECK(j.at("parameters")[0].dump() ==
        R"({"name":"weights","shape":[17],"encoding":"sparse","index":[3,16],"data":[1.5,-0.25]})");
  CHECK(j.at("parameters")[1].dump() == R"({"name":"bias","shape":[],"data":[0.125]})");

  const auto m = dt::output::parse_model(text, "model.json");
  REQUIRE(m.sparse);
  CHECK(!dt::output::sparse_difference(*m.sparse, hashed_source()));
  CHECK(m.spec.inputs == 17);
  CHECK(m.features.empty());
  CHECK(m.normalization.missing == dt::config::Missing::kZero);
  CHECK(m.weight_index == std::vector<std::uint64_t>{3, 16});
  CHECK(m.weight_values == std::vector<double>{1.5, -0.25});
  CHECK(m.params == std::vector<double>{0.125});
  CHECK(dt::output::dense_params(m) == r.params);
}

TEST_CASE("sparse model.json: a softmax model of LIBSVM rows read back") {
  dt::data::SparseSource s;
  s.width = 6;
  s.index_base = 1;
  const auto r = sparse_result(s, 3, {"a", "b", "c"});
  const auto text = write(ModelType::kSoftmaxRegression, r, dt::config::Missing::kError);
  CHECK(nlohmann::ordered_json::parse(text).at("sparse").dump() == R"({"format":"libsvm","width":6,"index_base":1})");
  const auto m = dt::output::parse_model(text, "model.json");
  REQUIRE(m.sparse);
  CHECK(m.sparse->index_base == 1);
  CHECK(m.spec.classes == 3);
  CHECK(m.weight_index == std::vector<std::uint64_t>{3, 17});
  CHECK(m.params == std::vector<double>{0, 0, 0.125});
  CHECK(dt::output::dense_params(m) == r.params);
}

TEST_CASE("sparse model.json: a dense run's model stays version 1 with its features") {
  dt::roles::RunResult r;
  r.status = "ok";
  r.source.features = {"a", "b"};
  r.source.label = "y";
  r.normalization.shift = {0, 0};
  r.normalization.scale = {1, 1};
  r.params = {1, 0, 0.5};
  dt::config::Config c;
  c.model.type = ModelType::kLinearRegression;
  const auto model = dt::models::make_model({c.model, 2, 0});
  const auto j = nlohmann::ordered_json::parse(dt::output::json_text(dt::output::model_json(c, r, *model)));
  CHECK(j.at("version") == 1);
  CHECK(j.at("features") == json({"a", "b"}));
  CHECK_FALSE(j.contains("sparse"));
  CHECK(j.at("parameters")[0].dump() == R"({"name":"weights","shape":[2],"data":[1.0,0.0]})");
}

TEST_CASE("sparse model.json: a wide model with few nonzeros allocates what its file lists") {
  // 2^24 keys, two nonzeros: the weights are kept as the two, never as 2^24 values.
  const auto m = dt::output::parse_model(
      libsvm_model(R"({"format": "libsvm", "width": 16777216, "index_base": 0})",
                   R"({"name": "weights", "shape": [16777216], "encoding": "sparse",
                       "index": [7, 16777215], "data": [1, -1]})"),
      "model.json");
  CHECK(m.spec.inputs == 16777216);
  CHECK(m.weight_index.size() == 2);
  CHECK(m.params.size() == 1);
  // The widest: 2^31 - 1, the int a sparse model's width is (and no run makes a wider one).
  CHECK_NOTHROW((void)dt::output::parse_model(
      libsvm_model(R"({"format": "libsvm", "width": 2147483647, "index_base": 0})",
                   R"({"name": "weights", "shape": [2147483647], "encoding": "sparse",
                       "index": [], "data": []})"),
      "model.json"));
}

TEST_CASE("sparse model.json: malformed files are refused naming the file and the field") {
  const std::string weights =
      R"({"name": "weights", "shape": [4], "encoding": "sparse", "index": [1], "data": [2]})";
  const std::string tail = "; is this a model.json written by disttrain run?";
  const auto sparse_error = [&](const std::string& sparse) {
    return parse_error(libsvm_model(sparse, weights));
  };
  CHECK(sparse_error(R"({"format": "libsvm", "width": 0, "index_base": 0})") ==
        "model.json: sparse: width is 0" + tail);
  CHECK(sparse_error(R"({"format": "libsvm", "width": 2147483648, "index_base": 0})") ==
        "model.json: sparse: field 'width' is 2147483648, not a whole number from 0 to "
        "2147483647" + tail);
  CHECK(sparse_error(R"({"format": "libsvm", "width": -4, "index_base": 0})").find(
            "field 'width' is -4") != std::string::npos);
  CHECK(sparse_error(R"({"format": "svm", "width": 4})") ==
        "model.json: sparse: format \"svm\" is not \"libsvm\" or \"csv\"" + tail);
  CHECK(sparse_error(R"({"format": "libsvm", "width": 4})") ==
        "model.json: sparse: missing field 'index_base'" + tail);
  CHECK(sparse_error(R"([1])") == "model.json: sparse: not an object" + tail);
  const auto csv = [&](const std::string& fields) {
    return sparse_error(R"({"format": "csv", "missing": "error", )" + fields + "}");
  };
  CHECK(csv(R"("width": 4, "hash_bits": 2, "hashed": ["a"], "numeric": ["b"])") ==
        "model.json: sparse: width 4 is not the 4 hashed keys and 1 numeric columns (5)" + tail);
  CHECK(csv(R"("width": 4, "hash_bits": 31, "hashed": ["a"])").find(
            "field 'hash_bits' is 31, not a whole number from 0 to 30") != std::string::npos);
  CHECK(csv(R"("width": 4, "hash_bits": 2, "hashed": ["a"], "crosses": [["a", "b"]])") ==
        "model.json: sparse: cross of 'b', which is not a hashed column" + tail);
  CHECK(csv(R"("width": 4, "hash_bits": 2, "hashed": ["y"])") ==
        "model.json: sparse: column 'y' is the label" + tail);
  CHECK(csv(R"("width": 5, "hash_bits": 2, "hashed": ["a"], "numeric": ["a"])") ==
        "model.json: sparse: column 'a' is listed twice" + tail);
  CHECK(csv(R"("width": 4, "hash_bits": 0, "hashed": ["a"])") ==
        "model.json: sparse: hashed columns need hash_bits from 1 to 30" + tail);
  CHECK(sparse_error(R"({"format": "csv", "width": 4, "hash_bits": 2, "hashed": ["a"], "missing": "drop"})") ==
        "model.json: sparse: missing \"drop\" is not \"error\", \"zero\" or \"mean\"" + tail);

  const std::string ok = R"({"format": "libsvm", "width": 4, "index_base": 0})";
  CHECK(parse_error(libsvm_model(ok, R"({"name": "weights", "shape": [4], "data": [0, 2, 0, 0]})")) ==
        "model.json: parameter 'weights' of a sparse model must be in sparse form (\"encoding\": "
        "\"sparse\", \"index\", \"data\")" + tail);
  CHECK(parse_error(libsvm_model(ok, R"({"name": "weights", "shape": [4], "encoding": "sparse",
                                       "index": [4], "data": [1]})")) ==
        "model.json: parameter 'weights': index entry 0 is 4, not a position below 4" + tail);
  CHECK(parse_error(libsvm_model(ok, R"({"name": "weights", "shape": [5], "encoding": "sparse",
                                       "index": [], "data": []})")).find("has shape [5]") !=
        std::string::npos);
  CHECK(parse_error(libsvm_model(ok, weights, R"("features": ["a"],)")) ==
        "model.json: a sparse model (version 2) lists no features" + tail);
  std::string no_sparse = libsvm_model(ok, weights);
  no_sparse.replace(no_sparse.find("\"sparse\""), 8, "\"sparsity\"");
  CHECK(parse_error(no_sparse) == "model.json: missing field 'sparse'" + tail);
  std::string v3 = libsvm_model(ok, weights);
  v3.replace(v3.find("\"version\": 2"), 12, "\"version\": 3");
  CHECK(parse_error(v3) ==
        "model.json: model format version 3 is not supported by this build (it reads 1 and 2)");
  std::string mlp = libsvm_model(ok, weights);
  mlp.replace(mlp.find("\"logistic_regression\""), 21,
              "\"mlp\", \"hidden\": [4], \"activation\": \"relu\"");
  CHECK(parse_error(mlp).find("an mlp has no sparse form") != std::string::npos);
}

TEST_CASE("sparse model.json: the sparse description of a run's data against a model's") {
  const auto a = hashed_source();
  CHECK(!dt::output::sparse_difference(a, a));
  auto b = a;
  b.hash_bits = 5;
  b.width = 33;
  CHECK(*dt::output::sparse_difference(a, b) == "the model is 17 keys wide, this data 33");
  b = a;
  b.crosses.clear();
  CHECK(dt::output::sparse_difference(a, b)->find("crosses: 1), this data [C1, C2] into 2^4 (crosses: 0)") !=
        std::string::npos);
  b = a;
  b.numeric = {"m"};
  CHECK(*dt::output::sparse_difference(a, b) == "the model's numeric columns are [n], this data's [m]");
  dt::data::SparseSource libsvm;
  libsvm.width = 17;
  CHECK(*dt::output::sparse_difference(a, libsvm) ==
        "the model reads hashed CSV columns, this data is LIBSVM rows");
  auto base1 = libsvm;
  base1.index_base = 1;
  CHECK(*dt::output::sparse_difference(libsvm, base1) ==
        "the model's LIBSVM indices start at 0, this data's at 1");
}

TEST_CASE("sparse predictor: the dense model's numbers on the same rows, from the nonzeros") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const auto type : {ModelType::kLinearRegression, ModelType::kLogisticRegression,
                          ModelType::kSoftmaxRegression}) {
    CAPTURE(static_cast<int>(type));
    const int width = 40;
    const int k = type == ModelType::kSoftmaxRegression ? 3 : 1;
    dt::output::SavedModel saved;
    saved.spec.config.type = type;
    saved.spec.config.task = dt::config::task_of(saved.spec.config);
    saved.spec.inputs = width;
    saved.spec.classes = type == ModelType::kSoftmaxRegression ? 3 : 0;
    saved.sparse = dt::data::SparseSource{};
    saved.sparse->width = width;
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(width * k); i += 1 + (i % 3)) {
      saved.weight_index.push_back(i);
      saved.weight_values.push_back(u(rng));
    }
    saved.params.assign(static_cast<std::size_t>(k), 0.0);
    for (auto& b : saved.params) b = u(rng);
    // Rows with a few ascending keys; the same rows dense.
    dt::data::Shard chunk;
    chunk.sparse.emplace();
    chunk.sparse->width = width;
    const int rows = 30;
    dt::data::RowMatrix dense = dt::data::RowMatrix::Zero(rows, width);
    for (int r = 0; r < rows; ++r) {
      std::vector<dt::data::KeyValue> row;
      for (auto key = static_cast<std::uint32_t>(r % 5); key < static_cast<std::uint32_t>(width);
           key += 7 + static_cast<std::uint32_t>(r % 3)) {
        row.push_back({key, u(rng)});
        dense(r, key) = row.back().value;
      }
      chunk.sparse->append(row);
    }
    chunk.x.resize(rows, 0);
    chunk.y = Eigen::VectorXd::Zero(rows);
    for (int r = 0; r < rows; ++r) {
      chunk.y(r) = type == ModelType::kLinearRegression     ? u(rng)
                   : type == ModelType::kLogisticRegression ? r % 2
                                                            : r % k;
    }
    dt::inference::SparsePredictor predictor(saved);
    predictor.load(chunk);
    dt::models::RowMatrix got, want;
    predictor.predict(got);
    const auto params = dt::output::dense_params(saved);
    auto model = dt::models::make_model(saved.spec);
    model->predict(params, dense, want);
    CHECK(got == want);  // bit for bit: ascending distinct keys (sparse_model.hpp)
    const auto sums = predictor.evaluate(chunk);
    const auto dense_sums = model->evaluate(params, dense, chunk.y);
    CHECK(sums.loss_sum == dense_sums.loss_sum);
    CHECK(sums.correct == dense_sums.correct);
    CHECK(sums.squared_error_sum == dense_sums.squared_error_sum);
  }
}

TEST_CASE("sparse model.json: model.init continues only on data read into the same keys") {
  const auto r = sparse_result(hashed_source(), 1, {"0", "1"});
  const dt::test::CsvFile file(write(ModelType::kLogisticRegression, r, dt::config::Missing::kZero),
                               "model.json");
  dt::config::Config c;
  c.model.type = ModelType::kLogisticRegression;
  c.model.init = file.path;
  dt::data::SourceInfo data;
  data.sparse = hashed_source();
  const auto init = dt::output::read_initial_model(c, data);
  CHECK(init.params == r.params);  // the full vector: zeros where the file lists nothing
  CHECK(init.classes == std::vector<std::string>{"0", "1"});
  CHECK(init.normalization.kind == dt::config::Normalize::kNone);

  data.sparse->numeric = {"m"};
  CHECK(dt::test::data_error([&] { (void)dt::output::read_initial_model(c, data); }) ==
        "model.init " + file.path.string() + " does not read this data as its training did: the "
        "model's numeric columns are [n], this data's [m]. A sparse model continues only on data "
        "whose rows become the same keys (data.hash, data.sparse, data.index_base as when it was "
        "trained)");
  data.sparse.reset();
  data.features = {"a"};
  CHECK(dt::test::data_error([&] { (void)dt::output::read_initial_model(c, data); }).find(
            "the model is sparse, this data dense") != std::string::npos);
}
