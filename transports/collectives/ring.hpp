#pragma once
// Ring all-reduce (bandwidth-optimal, no central node): reduce-scatter, then all-gather, over
// the ring members[0] -> members[1] -> ... -> members[N-1] -> members[0].
//
// The vector is cut into N segments, segment k = [floor(k*L/N), floor((k+1)*L/N)) (lengths
// not divisible by N, and shorter than N, are fine: some segments are then empty). In N-1
// reduce-scatter phases each member passes one segment on to its successor and adds the one it
// gets from its predecessor; then member i holds the full sum of segment i+1. In N-1 all-gather
// phases the full segments travel once around the ring. Each member sends and receives
// 2(N-1)/N of the vector in all. Segments travel in chunks of at most chunk_doubles values, so a
// large vector streams through bounded messages.
//
// Reproducible: segment k is always summed in the fixed order
//   ((x[k] + x[k+1]) + x[k+2]) + ... + x[k-1]   (member positions, mod N)
// by member k-1 alone, then copied to the others, so every member ends with the same bits and
// a run repeated gives the same bits. (Not the same bits as a rank-order sum: the order differs
// per segment. It differs from one in the last place, not more.)

#include "transports/collectives/peer_links.hpp"
#include "transports/half_codec.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dt::collectives {

struct RingStats {
  std::uint64_t allreduces = 0;
  std::uint64_t values_sent = 0;      // doubles sent to the successor, over all all-reduces
  std::uint64_t values_received = 0;  // doubles received from the predecessor
  // Of values_sent, those sent compressed, and the bytes of their frames (a codec given).
  std::uint64_t half_values_sent = 0;
  std::uint64_t half_bytes_sent = 0;
  double seconds = 0;                 // wall time inside allreduce_sum (waits included)
  RingStats& operator+=(const RingStats& other) noexcept {
    allreduces += other.allreduces;
    values_sent += other.values_sent;
    values_received += other.values_received;
    half_values_sent += other.half_values_sent;
    half_bytes_sent += other.half_bytes_sent;
    seconds += other.seconds;
    return *this;
  }
};

class Ring {
 public:
  // Made by PeerLinks::ring; `members` is checked there.
  Ring(PeerLinks& links, std::vector<std::uint32_t> members, std::uint64_t epoch = 0);

  [[nodiscard]] const std::vector<std::uint32_t>& members() const noexcept { return members_; }
  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }
  [[nodiscard]] std::size_t position() const noexcept { return position_; }  // mine in members
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] const RingStats& stats() const noexcept { return stats_; }

  // Replaces `values` on every member by the element-wise sum over all members. Every member
  // calls it with a vector of the same length, collectives of one ring in the same order.
  // Length 0 and N = 1 return at once. Throws TransportError (TimeoutError when a peer is
  // silent past the timeout) naming the peer, the phase and the collective; after a throw the
  // ring is unusable (peers are mid-collective) and the run should end.
  //
  // With a codec (aggregation.compression) every chunk travels as its 16-bit frame; each hop
  // adds what it decodes to its own values in float64, and the member that completes a segment
  // rounds its own copy as it sends it, so every member still ends with the same bits.
  void allreduce_sum(std::span<double> values,
                     std::optional<wire::HalfCodec> codec = std::nullopt);

  // The id a group of these members has: a hash of the ordered member list (and of the
  // group's incarnation, when not 0: see PeerLinks::ring).
  [[nodiscard]] static std::uint64_t group_id(const std::vector<std::uint32_t>& members,
                                              std::uint64_t epoch = 0);

 private:
  PeerLinks& links_;
  std::vector<std::uint32_t> members_;
  std::size_t position_ = 0;
  std::uint64_t id_ = 0;
  std::uint64_t seq_ = 0;  // collectives done on this ring
  RingStats stats_;
};

}  // namespace dt::collectives
