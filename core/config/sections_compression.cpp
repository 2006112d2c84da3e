// aggregation.compression: how the workers' gradients travel (none: float64; fp16 / bf16: 16 bits
// a value, transports/half_codec.hpp; {topk: {ratio}}: the largest entries with error feedback,
// transports/topk_codec.hpp) in mode gradients (star, sharded servers, ring), the models of mode
// parameters (fp16 / bf16 deltas, core/modes/parameters_half.hpp), and the setups it is not
// available with yet.

#include <fmt/format.h>

#include "core/config/internal.hpp"

namespace dt::config::detail {

WireCompression parse_compression(const Section& aggregation, double& topk_ratio) {
  if (aggregation.has("compression") && aggregation.node("compression").IsMap()) {
    const Section c = aggregation.section("compression");  // unknown keys: did you mean
    if (!c.has("topk")) {
      aggregation.fail("compression", "expected none, fp16, bf16 or a map such as "
                                      "{topk: {ratio: 0.1}}");
    }
    const Section topk = c.section("topk");
    if (!topk.has("ratio")) {
      topk.fail_missing("ratio", "the share of the gradient's entries each worker sends, in "
                                 "(0, 1], such as 0.1");
    }
    topk_ratio = topk.number("ratio", 0.0, Range::kAny);
    if (!(topk_ratio > 0.0 && topk_ratio <= 1.0)) {
      topk.fail("ratio", fmt::format("expected a number in (0, 1] (the share of the gradient's "
                                     "entries each worker sends), got {}",
                                     describe(topk.node("ratio"))));
    }
    return WireCompression::kTopk;
  }
  if (aggregation.has("compression") && aggregation.node("compression").IsScalar() &&
      aggregation.node("compression").Scalar() == "topk") {
    aggregation.fail("compression", "topk needs its ratio: write compression: {topk: {ratio: "
                                    "0.1}} (the share of the gradient's entries each worker sends)");
  }
  return aggregation.choice("compression", WireCompression::kNone, kWireCompressions);
}

void check_compression(const Section& root, const Config& c) {
  const WireCompression w = c.aggregation.compression;
  if (w == WireCompression::kNone) return;
  const Section a = root.section("aggregation");
  const char* name = name_of(w);
  const auto refuse = [&](const std::string& why) {
    a.fail("compression", fmt::format("{} {}", name, why));
  };
  if (c.aggregation.mode == AggregationMode::kParameters && w == WireCompression::kTopk) {
    // Model averaging sends models (as deltas with fp16 / bf16): a top-k of a model's change
    // would need a residual per client across rounds it may sit out; not built.
    refuse("compresses the gradients of aggregation.mode gradients; model averaging "
           "(mode parameters) sends its models as fp16 or bf16 deltas only; use compression "
           "fp16 or bf16 with mode parameters, or mode gradients");
  }
  if (c.aggregation.mode == AggregationMode::kAsync) {
    refuse("is not available with aggregation.mode async yet; use compression none with "
           "async, or mode gradients");
  }
  if (c.parallelism.tensor > 1) {
    refuse("is not available with parallelism.tensor > 1; use tensor: 1");
  }
  if (c.data.hash || c.data.sparse == SparseChoice::kOn) {
    // The sparse star sends each worker's gradient at the batch's keys only (already compact).
    refuse("compresses dense gradients; sparse rows (data.hash, data.sparse) exchange keyed "
           "gradients that are not compressed yet; use compression none with sparse rows");
  }
  if (w == WireCompression::kTopk && c.aggregation.topology == Topology::kRing) {
    // A reduce-scatter adds the chunks hop by hop: the union of the workers' chosen keys grows
    // at each hop until a chunk is dense again, and a top-k of the partial sums at each hop
    // would drop other workers' entries with no residual to keep them in.
    refuse("does not compose with topology ring: the ring adds partial sums hop by hop, so the "
           "chosen entries of the workers merge into dense chunks again; use topology star "
           "(with aggregation.servers for several servers), or compression fp16 or bf16 with "
           "the ring");
  }
}

}  // namespace dt::config::detail
