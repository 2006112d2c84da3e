#include "transports/collectives/chunk_frames.hpp"
#include "transports/half_codec.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace dt::collectives {
namespace {

static_assert(std::endian::native == std::endian::little);

template <class T>
void put_at(wire::Bytes& out, std::size_t at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);
}
template <class T>
[[nodiscard]] T get_at(const wire::Bytes& in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  return value;
}

}  // namespace

std::string peer_identity(std::uint32_t rank) { return fmt::format("p{}", rank); }

void encode_chunk_control(wire::Bytes& control, const ChunkKey& key, const ChunkPlace& place) {
  put_at<std::uint64_t>(control, 0, key.group);
  put_at<std::uint32_t>(control, 8, key.phase);
  put_at<std::uint32_t>(control, 12, key.chunk);
  put_at<std::uint64_t>(control, 16, place.length);
  put_at<std::uint64_t>(control, 24, place.offset);
  put_at<std::uint64_t>(control, 32, place.count);
}

ParsedChunk parse_chunk(const wire::Message& message, std::uint64_t job_id,
                        std::string_view peer) {
  ParsedChunk out;
  const auto& h = message.header;
  if (h.job_id != job_id) {
    out.why = fmt::format("it belongs to job {:016x}, not this job {:016x}", h.job_id, job_id);
    return out;
  }
  if (h.type != kPeerChunkType) {
    out.why = fmt::format("message type {}", h.type);
    return out;
  }
  if (peer != peer_identity(h.rank)) {
    out.why = fmt::format("it claims to come from rank {}", h.rank);
    return out;
  }
  const auto& p = message.payload;
  if (p.size() != 2 || p[0].size() != kChunkControlSize) {
    out.why = "malformed chunk frames";
    return out;
  }
  out.key = {get_at<std::uint64_t>(p[0], 0), h.rank, h.step, get_at<std::uint32_t>(p[0], 8),
             get_at<std::uint32_t>(p[0], 12)};
  out.place = {get_at<std::uint64_t>(p[0], 16), get_at<std::uint64_t>(p[0], 24),
               get_at<std::uint64_t>(p[0], 32)};
  // Compared as counts: count * 8 would wrap for a count of 2^61 and match an empty frame.
  const bool doubles =
      p[1].size() % sizeof(double) == 0 && out.place.count == p[1].size() / sizeof(double);
  const bool halves = p[1].size() >= wire::kHalfFrameHeader &&
                      (p[1].size() - wire::kHalfFrameHeader) % 2 == 0 &&
                      out.place.count == (p[1].size() - wire::kHalfFrameHeader) / 2;
  if (!doubles && !halves) {
    out.why = "chunk size disagrees with its count";
    return out;
  }
  if (out.place.offset > out.place.length || out.place.count > out.place.length - out.place.offset) {
    out.why = fmt::format("its {} values at offset {} lie outside its {}-value vector",
                          out.place.count, out.place.offset, out.place.length);
    return out;
  }
  return out;
}

}  // namespace dt::collectives
