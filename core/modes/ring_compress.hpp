#pragma once
// aggregation.compression over the ring (core/modes/ring.cpp). A step all-reduces
// [gradient (P values), rows, loss sum]; compressed, the gradient goes round in fp16 / bf16
// frames (transports/collectives/ring.hpp: each hop adds what it decodes to its own values in
// float64, so the partial sums are rounded once a hop, and the finished segments once; every
// replica ends with the same bits), then rows and loss in a second all-reduce of 2 values in
// float64: the row count divides the sum and must stay exact, the loss is logged as it is.

#include "core/coordinator/session.hpp"
#include "core/protocol/compression.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/half_codec.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dt::modes::ring {

// One step's all-reduce of `buffer` ([gradient, rows, loss]).
void allreduce_step(collectives::Ring& ring, std::span<double> buffer,
                    std::optional<wire::HalfCodec> codec);

// summary.json's aggregation.compression from the workers' kRingResult fields "half_values"
// and "half_bytes" (the values each sent compressed and their frames' bytes); nothing when
// the run is not compressed.
void put_compression_summary(roles::CoordinatorSession& session,
                             const std::vector<protocol::Envelope>& results);

// The "half_values" and "half_bytes" of `replies` added to `tally`: a kRingResult's count the
// whole run, a kRingLoss's what the worker sent since its reply before (SentSince).
void add_counts(protocol::CompressionTally& tally, const std::vector<protocol::Envelope>& replies);

// A failed run's counts: the workers report their whole run's counts only at the end
// (kRingResult), so each kRingLoss reply also carries what its worker sent compressed since its
// reply before; the coordinator adds those of every batch it records into a
// protocol::SummaryTally, which puts them in summary.json when the run fails (a worker lost
// under abort). Worker side: the counts already reported.
class SentSince {
 public:
  // Puts into `reply` what `total` (this worker's ring counters so far) adds to what it
  // reported before; nothing on an uncompressed run.
  void put(protocol::Envelope& reply, const collectives::RingStats& total);

 private:
  std::uint64_t values_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace dt::modes::ring
