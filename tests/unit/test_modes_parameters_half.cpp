// Mode parameters' half-float models (core/modes/parameters_half.hpp), both sides in one
// process: a client that holds the previous model rebuilds the coordinator's next one bit for
// bit from the delta frame; a client without it gets the model whole; the up delta rebuilds the
// trained model to within the frame's rounding; a delta on a version the worker does not hold is
// refused with the message pinned.

#include "core/modes/parameters_half.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace {

using dt::modes::HalfModelsIn;
using dt::modes::HalfModelsOut;
using dt::protocol::CompressionTally;
using dt::protocol::Envelope;
using dt::protocol::Type;
using dt::wire::HalfCodec;

Envelope round_request(HalfModelsOut& out, int rank, const std::vector<double>& params,
                       CompressionTally& tally) {
  Envelope e{.type = Type::kRound, .step = 0};
  out.put_model(e, rank, params, tally);
  return e;
}

}  // namespace

TEST_CASE("parameters half: whole first, then a delta that rebuilds the model bit for bit") {
  const HalfCodec codec = HalfCodec::kFp16;
  HalfModelsOut out(codec, 2);
  HalfModelsIn worker;
  CompressionTally tally;
  std::vector<double> params = {1000.0, -3.25, 0.125, 7.0};

  const auto first = round_request(out, 0, params, tally);
  CHECK_FALSE(first.fields.contains("delta_from"));
  const auto got = worker.read_model(first, codec, params.size());
  CHECK(std::vector<double>(got.begin(), got.end()) == params);

  // The worker trains; its delta rebuilds its model to within fp16's 11 bits of the change.
  const std::vector<double> trained = {1000.5, -3.0, 0.1, 7.0};
  Envelope reply{.type = Type::kRoundResult, .step = 0};
  reply.arrays.push_back(worker.encode_trained(trained, codec));
  const auto rebuilt = out.model_of(reply, params, 0, tally);
  for (std::size_t i = 0; i < params.size(); ++i) {
    CHECK(std::abs(rebuilt[i] - trained[i]) <= std::abs(trained[i] - params[i]) * 0x1p-10);
  }
  CHECK(rebuilt[3] == 7.0);  // no change, no rounding

  // The merge moves the coordinator's model by the rounded change; the worker rebuilds it.
  const std::vector<double> merged = {1000.3, -3.1, 0.11, 7.0};
  out.advance(params, merged);
  const auto second = round_request(out, 0, params, tally);
  CHECK(second.fields.contains("delta_from"));
  CHECK(second.arrays[0].size() == dt::wire::half_frame_size(params.size()));
  const auto next = worker.read_model(second, codec, params.size());
  CHECK(std::vector<double>(next.begin(), next.end()) == params);

  // Rank 1 never got a model: it gets this one whole, the same bits.
  const auto whole = round_request(out, 1, params, tally);
  CHECK_FALSE(whole.fields.contains("delta_from"));
  HalfModelsIn fresh;
  const auto fresh_model = fresh.read_model(whole, codec, params.size());
  CHECK(std::vector<double>(fresh_model.begin(), fresh_model.end()) == params);

  // 2 whole (4 values, 32 bytes each), 1 delta frame down (16 bytes), 1 up (16 bytes).
  const auto j = tally.to_json(dt::config::Config{});
  CHECK(j["values"] == 16);
  CHECK(j["bytes"] == 2 * 32 + 2 * 16);
}

TEST_CASE("parameters half: a delta on a version the worker does not hold is refused") {
  const HalfCodec codec = HalfCodec::kBf16;
  HalfModelsOut out(codec, 1);
  CompressionTally tally;
  std::vector<double> params = {1.0, 2.0};
  (void)round_request(out, 0, params, tally);
  out.advance(params, std::vector<double>{1.5, 2.5});
  const auto delta = round_request(out, 0, params, tally);
  HalfModelsIn replacement;  // a new process: holds nothing
  CHECK_THROWS_WITH_AS(
      (void)replacement.read_model(delta, codec, params.size()),
      "parameters mode, round 1: the model came as a delta on model version 1, but this worker "
      "holds none; the coordinator sends a worker without that version the model whole (a bug "
      "if seen)",
      dt::ProtocolError);
}
