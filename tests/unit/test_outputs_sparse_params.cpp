// model.json's sparse parameter blocks (core/outputs/sparse_params.hpp): nonzero values with
// their indices, written and read back to the same vector; every malformed block refused.

#include "core/outputs/sparse_params.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

// A softmax layout of 5 keys x 2 classes: "weights" [5, 2] then "bias" [2].
const dt::models::ParamBlock kWeights{"weights", {5, 2}, 0, 10, true};
const dt::models::ParamBlock kBias{"bias", {2}, 10, 2, false};

std::string read_error(const std::string& text) {
  return dt::test::message_of<dt::DataError>([&] {
    std::vector<double> out(10);
    dt::output::read_sparse_block(json::parse(text), kWeights, out, "model.json");
  });
}

}  // namespace

TEST_CASE("sparse params: nonzero values and their indices, read back to the same vector") {
  const std::vector<double> params{0, 0, 1.5, -2, 0, 0, 0, 0, 0, 1e-300, 0.25, 0};
  const auto j = dt::output::sparse_block_json(kWeights, params);
  CHECK(j.dump() ==
        R"({"name":"weights","shape":[5,2],"encoding":"sparse","index":[2,3,9],"data":[1.5,-2.0,1e-300]})");
  const auto b = dt::output::sparse_block_json(kBias, params);
  CHECK(b.dump() == R"({"name":"bias","shape":[2],"encoding":"sparse","index":[0],"data":[0.25]})");
  // Through text, as a file holds it: the same bits back (JSON numbers round-trip doubles).
  std::vector<double> back(12, 7.0);
  const json parsed = json::parse(j.dump());
  CHECK(dt::output::is_sparse_block(parsed));
  dt::output::read_sparse_block(parsed, kWeights, std::span<double>(back).first(10), "m.json");
  dt::output::read_sparse_block(json::parse(b.dump()), kBias,
                                std::span<double>(back).subspan(10), "m.json");
  CHECK(back == params);
  CHECK_FALSE(dt::output::is_sparse_block(json::parse(R"({"name": "weights", "data": [1]})")));
}

TEST_CASE("sparse params: an all-zero block is empty lists") {
  const std::vector<double> zeros(12, 0.0);
  const auto j = dt::output::sparse_block_json(kWeights, zeros);
  CHECK(j.at("index").empty());
  std::vector<double> back(10, 3.0);
  dt::output::read_sparse_block(json::parse(j.dump()), kWeights, back, "m.json");
  CHECK(back == std::vector<double>(10, 0.0));
}

TEST_CASE("sparse params: malformed blocks are refused with the file, the block and the fault") {
  const std::string tail = "; is this a model.json written by disttrain run?";
  CHECK(read_error(R"({"index": [1, 2], "data": [1]})") ==
        "model.json: parameter 'weights': 'index' has 2 entries but 'data' 1" + tail);
  CHECK(read_error(R"({"data": [1]})") ==
        "model.json: parameter 'weights': missing field 'index'" + tail);
  CHECK(read_error(R"({"index": 3, "data": [1]})") ==
        "model.json: parameter 'weights': field 'index' is not a list" + tail);
  CHECK(read_error(R"({"index": [10], "data": [1]})") ==
        "model.json: parameter 'weights': index entry 0 is 10, not a position below 10" + tail);
  CHECK(read_error(R"({"index": [-1], "data": [1]})") ==
        "model.json: parameter 'weights': index entry 0 is -1, not a position below 10" + tail);
  CHECK(read_error(R"({"index": [1.5], "data": [1]})") ==
        "model.json: parameter 'weights': index entry 0 is 1.5, not a position below 10" + tail);
  CHECK(read_error(R"({"index": [4, 4], "data": [1, 2]})") ==
        "model.json: parameter 'weights': index entry 1 is 4, not above the one before (4): "
        "indices ascend" + tail);
  CHECK(read_error(R"({"index": [4, 2], "data": [1, 2]})").find("not above the one before") !=
        std::string::npos);
  CHECK(read_error(R"({"index": [4], "data": ["x"]})") ==
        "model.json: parameter 'weights': value 0 (at index 4) is \"x\", not a finite number" + tail);
  // JSON text cannot hold an infinity (the parser refuses 1e999), a json value built in memory can.
  const json infinite = {{"index", json::array({4})},
                         {"data", json::array({std::numeric_limits<double>::infinity()})}};
  const auto message = dt::test::message_of<dt::DataError>([&] {
    std::vector<double> out(10);
    dt::output::read_sparse_block(infinite, kWeights, out, "model.json");
  });
  CHECK(message.find("value 0 (at index 4) is null, not a finite number") != std::string::npos);
}
