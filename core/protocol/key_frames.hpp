#pragma once
// Sparse exchanges (issue 16): the feature keys a worker's batch touches travel as one frame of
// delta-encoded varints, the values beside them as plain doubles. A key list is sorted and
// unique, so each key after the first is written as its gap to the one before, in LEB128
// (7 bits a byte, the high bit set on every byte but the last): keys 100 apart cost one byte,
// keys 16384 apart three, where a raw key costs four. The first key is its own value.
//
// Decoding checks everything a peer could get wrong and throws ProtocolError naming the frame:
// a varint longer than a 32-bit key needs, a gap of 0 (a repeated key), a key at or past the
// model's width, a frame that ends inside a varint, or more keys than the frame promises.

#include "transports/wire.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace dt::protocol {

// `keys` (sorted, unique) as a frame: a 4-byte little-endian count, then the varints.
[[nodiscard]] wire::Bytes encode_keys(std::span<const std::uint32_t> keys);

// The same frame into `out`, replacing what it held (reused from step to step: no allocation
// once it is large enough).
void encode_keys_into(std::span<const std::uint32_t> keys, wire::Bytes& out);

// The keys of a frame into `out` (cleared first; its capacity kept). `width`: every key must be
// below it. `what` names the frame in the message ("push from w2: keys").
void decode_keys(std::span<const std::byte> frame, std::uint64_t width, std::string_view what,
                 std::vector<std::uint32_t>& out);

// The frame size encode_keys gives for `keys`, without making it (for byte accounting).
[[nodiscard]] std::size_t encoded_key_bytes(std::span<const std::uint32_t> keys) noexcept;

}  // namespace dt::protocol
