#pragma once
// Top-k sparsified vectors on the wire (aggregation.compression {topk: {ratio}}): the k entries
// of a float64 vector chosen by the sender, as their keys (ascending, delta-encoded as LEB128
// varints: a gap below 128 takes one byte) and their values (float64, exact). What is not sent
// is the sender's business (error feedback: core/protocol/topk_feedback.hpp).
//
//   offset size field
//   0      1    codec (3 topk; the half frames use 1 and 2)
//   1      1    format version (1)
//   2      2    zero
//   4      4    length n of the dense vector
//   8      4    count k of entries (0 <= k <= n; 0 is a valid frame: nothing to add)
//   12     4    bytes L of the keys
//   16     L    the keys: the first as is, each next as (key - previous - 1), LEB128
//   16+L   8k   the values, little-endian float64 (unaligned: read with memcpy)
//
// Decoding checks every field against the frame's size and the expected n, and that the keys
// are strictly ascending below n, and never reads past the frame (ProtocolError otherwise).

#include "transports/wire.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dt::wire {

inline constexpr std::uint8_t kTopkCodec = 3;
inline constexpr std::size_t kTopkFrameHeader = 16;

// k = max(1, ceil(ratio * n)) for n > 0 (ratio in (0, 1]), at most n; 0 for n = 0.
[[nodiscard]] std::size_t topk_count(double ratio, std::size_t n);

// The indices of the k entries of `values` of largest magnitude, ascending. Ties go to the
// lower index and NaN counts as the largest magnitude, so the choice is a pure function of the
// values (the same bits on every run). `order` is scratch (reused across calls).
void select_topk(std::span<const double> values, std::size_t k, std::vector<std::uint32_t>& order,
                 std::vector<std::uint32_t>& out);

// The frame of the entries (keys ascending, all < n; minus `base`, so a server gets keys local
// to its range) into `out` (resized; no allocation once its capacity suffices).
void encode_topk(std::span<const std::uint32_t> keys, std::span<const double> values,
                 std::uint32_t base, std::size_t n, Bytes& out);
// The frame's entries: out[key] += value, in key order. out.size() must be the frame's n.
void add_topk(std::span<const std::byte> frame, std::span<double> out);
// The frame's entry count (checked as add_topk checks the whole frame).
[[nodiscard]] std::size_t topk_entries(std::span<const std::byte> frame, std::size_t n);

}  // namespace dt::wire
