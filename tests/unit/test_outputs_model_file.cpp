// model.json read back (output::parse_model, which read_model calls): sizes a file cannot hold.

#include "base/error.hpp"
#include "core/outputs/run_output.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

// A two-class MLP on two features, with hidden layer sizes `hidden` and parameters as given.
std::string mlp_json(const std::string& hidden, const std::string& parameters) {
  return R"({"format": "disttrain-model", "version": 1,
  "model": {"type": "mlp", "task": "binary", "hidden": [)" + hidden + R"(],
            "activation": "relu", "l2": 0},
  "features": ["a", "b"], "label": "y", "classes": ["0", "1"],
  "normalization": {"kind": "none", "shift": [0, 0], "scale": [1, 1]},
  "parameters": )" + parameters + "}";
}

}  // namespace

TEST_CASE("model file: a model of the right sizes reads back") {
  const std::string blocks = R"([
    {"name": "layers.0.weight", "shape": [2, 1], "data": [0.5, -0.5]},
    {"name": "layers.0.bias", "shape": [1], "data": [0.25]},
    {"name": "layers.1.weight", "shape": [1, 1], "data": [2]},
    {"name": "layers.1.bias", "shape": [1], "data": [-1]}])";
  const auto model = dt::output::parse_model(mlp_json("1", blocks), "model.json");
  CHECK(model.params == std::vector<double>{0.5, -0.5, 0.25, 2, -1});
}

TEST_CASE("model file: sizes that declare more parameters than the file holds are refused") {
  // Found by tests/fuzz/fuzz_model_json: these few hundred bytes asked for 8 TB (predict ended
  // with "internal error: std::bad_alloc"); [30000, 30000] took 7 GB and 16 s to be refused.
  const auto text = mlp_json("1048576, 1048576", "[]");
  const auto message = dt::test::message_of<dt::DataError>(
      [&] { (void)dt::output::parse_model(text, "model.json"); });
  CHECK(message == "model.json: its sizes make 1099516870657 parameters, more than its " +
                       std::to_string(text.size()) +
                       " bytes can hold; is this a model.json written by disttrain run?");
}

TEST_CASE("model file: whole numbers that do not fit an int are refused, never converted") {
  // Found by tests/fuzz/fuzz_model_json: a version of 1e38 was converted to int, which is
  // undefined behaviour (UBSan: "outside the range of representable values of type 'int'").
  const auto error_of = [](const std::string& text) {
    return dt::test::message_of<dt::DataError>(
        [&] { (void)dt::output::parse_model(text, "model.json"); });
  };
  const std::string tail = "; is this a model.json written by disttrain run?";
  CHECK(error_of(R"({"format": "disttrain-model", "version": 1e38})") ==
        "model.json: field 'version' is 1e+38, not a whole number from -2147483648 to 2147483647" +
            tail);
  CHECK(error_of(R"({"format": "disttrain-model", "version": "1"})") ==
        "model.json: field 'version' is not a number, not a whole number from -2147483648 to "
        "2147483647" + tail);
  // 2^32 + 1 read as 1 hidden unit before.
  CHECK(error_of(mlp_json("4294967297", "[]")) ==
        "model.json: field 'hidden' is 4294967297, not a whole number from -2147483648 to "
        "2147483647" + tail);
}
