#include "core/modes/ring_compress.hpp"

#include "core/protocol/compression.hpp"
#include "core/protocol/step_messages.hpp"

namespace dt::modes::ring {

void allreduce_step(collectives::Ring& ring, std::span<double> buffer,
                    std::optional<wire::HalfCodec> codec) {
  if (!codec || buffer.size() < 2) {
    ring.allreduce_sum(buffer);
    return;
  }
  const std::size_t p = buffer.size() - 2;
  ring.allreduce_sum(buffer.first(p), codec);
  ring.allreduce_sum(buffer.subspan(p));
}

void put_compression_summary(roles::CoordinatorSession& session,
                             const std::vector<protocol::Envelope>& results) {
  if (!protocol::half_codec(session.config())) return;
  protocol::CompressionTally tally;
  add_counts(tally, results);
  session.result().aggregation["compression"] = tally.to_json(session.config());
}

void add_counts(protocol::CompressionTally& tally, const std::vector<protocol::Envelope>& replies) {
  for (const auto& r : replies) {
    tally.add(protocol::count_or(r, "half_values", 0), protocol::count_or(r, "half_bytes", 0));
  }
}

void SentSince::put(protocol::Envelope& reply, const collectives::RingStats& total) {
  if (total.half_values_sent == 0) return;
  reply.fields["half_values"] = total.half_values_sent - values_;
  reply.fields["half_bytes"] = total.half_bytes_sent - bytes_;
  values_ = total.half_values_sent;
  bytes_ = total.half_bytes_sent;
}

}  // namespace dt::modes::ring
