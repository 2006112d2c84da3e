// aggregation.compression: how the workers' gradients travel (none: float64; fp16 / bf16: 16 bits
// a value, transports/half_codec.hpp) in mode gradients (star, sharded servers, ring), and the
// setups it is not available with yet.

#include <fmt/format.h>

#include "core/config/internal.hpp"

namespace dt::config::detail {

WireCompression parse_compression(const Section& aggregation) {
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
  if (c.aggregation.mode == AggregationMode::kParameters) {
    refuse("compresses the gradients of aggregation.mode gradients; model averaging "
           "(mode parameters) sends whole models and is not compressed yet; use compression "
           "none with mode parameters, or mode gradients");
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
}

}  // namespace dt::config::detail
