// data.missing's fill values on their way: the loaded and finalize messages, and model.json.

#include "base/error.hpp"
#include "core/outputs/run_output.hpp"
#include "core/protocol/protocol.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

// A linear model on features a and b with the given "missing" member (empty: none).
std::string linear_with_missing(const std::string& missing) {
  return R"({"format": "disttrain-model", "version": 1,
  "model": {"type": "linear_regression", "task": "regression", "l2": 0},
  "features": ["a", "b"], "label": "y",
  "normalization": {"kind": "none", "shift": [0, 0], "scale": [1, 1]},)" +
         (missing.empty() ? std::string() : "\"missing\": " + missing + ",") + R"(
  "parameters": [{"name": "weights", "shape": [2], "data": [1, 2]},
                 {"name": "bias", "shape": [], "data": [0.5]}]})";
}

}  // namespace

TEST_CASE("missing: present counts travel in the loaded message, fill values in finalize") {
  dt::protocol::Loaded loaded;
  loaded.rows = 3;
  loaded.stats.count = 3;
  loaded.stats.mean = {1.0, 2.0};
  loaded.stats.m2 = loaded.stats.min = loaded.stats.max = {0.0, 0.0};
  const auto round = [](const dt::protocol::Envelope& e) {
    return dt::protocol::decode(dt::protocol::encode(e, 1), 1);
  };
  CHECK(dt::protocol::read_loaded(round(dt::protocol::make_loaded(loaded)), 2).stats.present.empty());
  loaded.stats.present = {3, 1};
  CHECK(dt::protocol::read_loaded(round(dt::protocol::make_loaded(loaded)), 2).stats.present ==
        std::vector<std::uint64_t>{3, 1});

  dt::protocol::Finalize f;
  f.normalization.shift = {0, 0};
  f.normalization.scale = {1, 1};
  auto back = dt::protocol::read_finalize(round(dt::protocol::make_finalize(f)), 2);
  CHECK(back.normalization.missing == dt::config::Missing::kError);
  CHECK(back.normalization.fill.empty());
  f.normalization.missing = dt::config::Missing::kMean;
  f.normalization.fill = {0.25, -3};
  back = dt::protocol::read_finalize(round(dt::protocol::make_finalize(f)), 2);
  CHECK(back.normalization.missing == dt::config::Missing::kMean);
  CHECK(back.normalization.fill == std::vector<double>{0.25, -3});
}

TEST_CASE("missing: model.json's fill values read back, and bad ones are refused") {
  const auto none = dt::output::parse_model(linear_with_missing(""), "m.json");
  CHECK(none.normalization.missing == dt::config::Missing::kError);
  CHECK(none.normalization.fill.empty());
  const auto mean =
      dt::output::parse_model(linear_with_missing(R"({"policy": "mean", "fill": [1.5, -2]})"), "m.json");
  CHECK(mean.normalization.missing == dt::config::Missing::kMean);
  CHECK(mean.normalization.fill == std::vector<double>{1.5, -2});
  const auto error_of = [](const std::string& missing) {
    return dt::test::message_of<dt::DataError>(
        [&] { (void)dt::output::parse_model(linear_with_missing(missing), "m.json"); });
  };
  CHECK(error_of(R"({"policy": "mean", "fill": [1]})") ==
        "m.json: missing.fill has a different length than features; is this a model.json "
        "written by disttrain run?");
  CHECK(error_of(R"({"policy": "error", "fill": [1, 2]})") ==
        "m.json: unknown missing policy 'error'; is this a model.json written by disttrain run?");
  CHECK(error_of(R"({"policy": "zero", "fill": [0, null]})").find("m.json: ") == 0);
}
