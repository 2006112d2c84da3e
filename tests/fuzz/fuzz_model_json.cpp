// libFuzzer harness: model.json as `disttrain predict/eval --model FILE` reads it
// (output::parse_model, which read_model calls with the file's text), then, for an accepted
// model, what predict and eval do with it: predictions and metrics on a few rows (sparse rows
// for a sparse model). A model whose
// fields disagree must be refused by the reader, never reach the model with wrong shapes.

#include "core/outputs/inference.hpp"
#include "tests/fuzz/harness.hpp"

#include <cmath>

namespace {

// A sparse model (version 2): three sparse rows of its first keys through what predict and
// eval do. Past 2^24 keys only the reading is fuzzed: compact's bitmap (width / 4 bytes, up to
// 512 MiB, docs/sparse.md) would make each run slow, not find more.
void sparse(const dt::output::SavedModel& model) {
  if (model.sparse->width > (std::uint64_t{1} << 24)) return;
  dt::data::Shard shard;
  constexpr Eigen::Index kRows = 3;
  shard.x.resize(kRows, 0);
  shard.y = Eigen::VectorXd::Zero(kRows);
  shard.sparse.emplace();
  shard.sparse->width = model.sparse->width;
  for (Eigen::Index i = 0; i < kRows; ++i) {
    std::vector<dt::data::KeyValue> row;
    for (std::uint32_t key = 0; key < 4 && key < model.sparse->width; ++key) {
      row.push_back({key, static_cast<double>(i) - key * 0.5});
    }
    shard.sparse->append(row);
  }
  std::string csv = dt::inference::predictions_header(model);
  const auto header = csv.size();
  dt::inference::SparsePredictor predictor(model);
  dt::inference::append_predictions(model, predictor, shard, csv);
  dt::fuzz::expect(csv.size() > header, "a line of predictions for the sparse rows");
  dt::inference::Evaluation evaluation(model);
  evaluation.add(shard);
  (void)evaluation.metrics();
}

void one(std::string_view input) {
  const auto model = dt::output::parse_model(input, "model.json");
  if (model.sparse) {
    dt::fuzz::expect(model.features.empty() && model.weight_index.size() == model.weight_values.size(),
                     "a sparse model has no features and a value for each listed weight");
    sparse(model);
    return;
  }
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
