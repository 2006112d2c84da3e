#pragma once
// The frames of one peer message (a piece of a collective, worker -> worker): what
// PeerLinks::send_chunk writes and what every arrival on a member's listener is checked with
// before anything of it is used. A peer is another process, so its frames are outside input:
// tests/fuzz/fuzz_step.cpp feeds parse_chunk hostile ones.
//
//   header (transports/wire.hpp): type kPeerChunkType, the job, rank = the sender,
//                                 step = the collective's sequence number in its group
//   frame 0, 40 bytes, little-endian:
//     0 group u64 | 8 phase u32 | 12 chunk u32 | 16 length u64 | 24 offset u64 | 32 count u64
//   frame 1: `count` doubles, or (aggregation.compression) a half frame of `count` values
//            (transports/half_codec.hpp: 8 + 2 * count bytes); the receiver decodes the one it
//            expects and refuses the other

#include "transports/wire.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dt::collectives {

// The wire type of peer messages. core/protocol/protocol reserves this number
// (Type::kPeerChunk) so that no coordinator message ever shares it.
inline constexpr std::uint16_t kPeerChunkType = 16;
inline constexpr std::size_t kChunkControlSize = 40;

// Which message a receive wants; `from` is the sender's rank.
struct ChunkKey {
  std::uint64_t group = 0;
  std::uint32_t from = 0;
  std::uint64_t seq = 0;     // the collective's number within its group (header.step)
  std::uint32_t phase = 0;   // the algorithm's step within the collective
  std::uint32_t chunk = 0;   // the piece within the phase
  friend auto operator<=>(const ChunkKey&, const ChunkKey&) = default;
};

// Where a chunk's values belong: [offset, offset + count) of a `length`-value vector. Sent with
// every chunk and checked on receipt, so members that disagree on the vector fail loudly.
struct ChunkPlace {
  std::uint64_t length = 0;
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

// The identity a member's connections carry ("p3"): how a receiver knows who sent a message.
[[nodiscard]] std::string peer_identity(std::uint32_t rank);

// Writes frame 0 of a chunk (`control` must be kChunkControlSize bytes; no allocation).
void encode_chunk_control(wire::Bytes& control, const ChunkKey& key, const ChunkPlace& place);

// One arrival checked as a peer chunk of job `job_id` on a connection named `peer`: the job, the
// type, that the sender's identity matches the rank it claims, the two frames and that the
// values are `count` doubles. `why` is empty for a chunk, else says why it is dropped.
struct ParsedChunk {
  ChunkKey key;
  ChunkPlace place;
  std::string why;
};
[[nodiscard]] ParsedChunk parse_chunk(const wire::Message& message, std::uint64_t job_id,
                                      std::string_view peer);

}  // namespace dt::collectives
