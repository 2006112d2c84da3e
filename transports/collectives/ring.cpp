#include "transports/collectives/ring.hpp"

#include "base/error.hpp"
#include "base/timeline.hpp"

#include <algorithm>
#include <chrono>

namespace dt::collectives {
namespace {

struct Segment {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// Segment k of n over `length` values: [floor(k*L/n), floor((k+1)*L/n)).
[[nodiscard]] Segment segment(std::uint64_t length, std::size_t n, std::size_t k) {
  const auto bound = [&](std::size_t j) {
    // floor(j*L/n) without the product j*L, which could overflow.
    const std::uint64_t q = length / n, r = length % n;
    return j * q + j * r / n;
  };
  return {bound(k), bound(k + 1)};
}

[[nodiscard]] std::uint64_t chunks_of(const Segment& s, std::uint64_t chunk) {
  return (s.end - s.begin + chunk - 1) / chunk;
}

}  // namespace

std::uint64_t Ring::group_id(const std::vector<std::uint32_t>& members, std::uint64_t epoch) {
  // FNV-1a over the member count and the ranks in order.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  };
  mix(members.size());
  for (const auto m : members) mix(m);
  if (epoch != 0) mix(epoch);
  return h;
}

Ring::Ring(PeerLinks& links, std::vector<std::uint32_t> members, std::uint64_t epoch)
    : links_(links), members_(std::move(members)), id_(group_id(members_, epoch)) {
  position_ = static_cast<std::size_t>(
      std::find(members_.begin(), members_.end(), links_.rank()) - members_.begin());
}

void Ring::allreduce_sum(std::span<double> values, std::optional<wire::HalfCodec> codec) {
  const std::size_t n = members_.size();
  const std::uint64_t seq = seq_++;
  const auto start = std::chrono::steady_clock::now();
  ++stats_.allreduces;
  if (n == 1 || values.empty()) return;
  links_.begin(id_, seq);
  timeline::Lap lap(start);
  const auto halves = static_cast<std::uint32_t>(n - 1);  // the segments of each half

  const std::uint64_t length = values.size();
  const std::uint64_t chunk = links_.options().chunk_doubles;
  const std::size_t i = position_;
  const std::uint32_t next = members_[(i + 1) % n];
  const std::uint32_t prev = members_[(i + n - 1) % n];
  const auto slice = [&](std::uint64_t begin, std::uint64_t count) {
    return values.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(count));
  };

  // Phases 0 .. n-2 reduce-scatter, n-1 .. 2n-3 all-gather. In phase p this member sends
  // segment `out` and receives segment `in`; chunk c of both goes before chunk c+1, sends first,
  // so every member's sends are queued before it waits (no member waits on one that waits).
  for (std::size_t phase = 0; phase + 2 < 2 * n; ++phase) {
    const bool gather = phase >= n - 1;
    const std::size_t s = gather ? phase - (n - 1) : phase;
    const std::size_t out_k = gather ? (i + 1 + n - s) % n : (i + n - s) % n;
    const std::size_t in_k = gather ? (i + n - s) % n : (i + 2 * n - s - 1) % n;
    const Segment out = segment(length, n, out_k);
    const Segment in = segment(length, n, in_k);
    const std::uint64_t chunks = std::max(chunks_of(out, chunk), chunks_of(in, chunk));
    const char* what = gather ? "ring all-reduce (all-gather)" : "ring all-reduce (reduce-scatter)";
    // output.timeline: one span per half, the reduce-scatter's ending where the all-gather's
    // starts (one clock read more than the seconds below need).
    if (phase == n - 1) lap.mark(timeline::Phase::kReduceScatter, halves);
    for (std::uint64_t c = 0; c < chunks; ++c) {
      const ChunkKey sent{id_, links_.rank(), seq, static_cast<std::uint32_t>(phase),
                          static_cast<std::uint32_t>(c)};
      const std::uint64_t out_at = out.begin + c * chunk;
      if (out_at < out.end) {
        const std::uint64_t count = std::min(chunk, out.end - out_at);
        // The segment's sum is complete here: kept as the others will decode it.
        if (codec && gather && s == 0) wire::round_half(slice(out_at, count), *codec);
        const std::size_t bytes =
            links_.send_chunk(next, sent, {length, out_at, count}, slice(out_at, count), codec);
        stats_.values_sent += count;
        if (codec) {
          stats_.half_values_sent += count;
          stats_.half_bytes_sent += bytes;
        }
      }
      const std::uint64_t in_at = in.begin + c * chunk;
      if (in_at < in.end) {
        const std::uint64_t count = std::min(chunk, in.end - in_at);
        ChunkKey want = sent;
        want.from = prev;
        const ChunkPlace place{length, in_at, count};
        if (gather) {
          links_.receive_chunk(want, place, slice(in_at, count), what, codec);
        } else {
          links_.receive_chunk_add(want, place, slice(in_at, count), what, codec);
        }
        stats_.values_received += count;
      }
    }
  }
  const auto end = std::chrono::steady_clock::now();
  lap.mark(timeline::Phase::kAllGather, end, halves);
  stats_.seconds += std::chrono::duration<double>(end - start).count();
}

}  // namespace dt::collectives
