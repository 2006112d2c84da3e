// libFuzzer harness: model.json as `disttrain predict/eval --model FILE` reads it
// (output::parse_model, which read_model calls with the file's text), then, for an accepted
// model, what predict and eval do with it: predictions and metrics on a few rows. A model whose
// fields disagree must be refused by the reader, never reach the model with wrong shapes.

#include "core/outputs/inference.hpp"
#include "tests/fuzz/harness.hpp"

#include <cmath>

namespace {

void one(std::string_view input) {
  const auto model = dt::output::parse_model(input, "model.json");
  const auto features = static_cast<Eigen::Index>(model.features.size());
  dt::data::Shard shard;
  constexpr Eigen::Index kRows = 3;
  shard.x = dt::data::RowMatrix::Zero(kRows, features);
  for (Eigen::Index i = 0; i < kRows; ++i) {
    for (Eigen::Index j = 0; j < features; ++j) shard.x(i, j) = static_cast<double>(i - j) * 0.5;
  }
  dt::data::apply(model.normalization, shard.x);
  shard.y = Eigen::VectorXd::Zero(kRows);
  // As predict and eval do it, a chunk at a time (this one chunk).
  std::string csv = dt::inference::predictions_header(model);
  dt::fuzz::expect(!csv.empty(), "predictions have a header");
  const auto header = csv.size();
  const auto predictor = dt::models::make_model(model.spec);
  dt::inference::append_predictions(model, *predictor, shard, csv);
  dt::fuzz::expect(csv.size() > header, "a line of predictions for the rows");
  dt::inference::Evaluation evaluation(model);
  evaluation.add(shard);
  (void)evaluation.metrics();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
