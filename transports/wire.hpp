#pragma once
// The wire format: every message is one ZeroMQ multipart message made of a fixed 40-byte header
// frame followed by zero or more raw payload frames.
//
//   offset size field
//   0      4    magic "DTRN"
//   4      2    protocol version (kProtocolVersion)
//   6      2    message type (defined by core/protocol/protocol; opaque here)
//   8      8    job id
//   16     4    rank of the sender (kCoordinatorRank for the coordinator)
//   20     4    generation: bumped each time a run re-forms (a worker lost or replaced), so
//                that a reply to an abandoned attempt of a step is told from a fresh one
//   24     8    step
//   32     8    payload size: the sum of the payload frames' sizes
//
// All integers little-endian. Decoding checks the frame size, magic, version and payload size,
// and never reads past a buffer. The magic and the version come first in every protocol version
// (whatever else changes), so that builds of different versions can tell each other apart.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace dt::wire {

inline constexpr std::uint32_t kMagic = 0x4E525444;  // "DTRN" read as little-endian
inline constexpr std::uint16_t kProtocolVersion = 3;
inline constexpr std::size_t kHeaderSize = 40;
inline constexpr std::uint32_t kCoordinatorRank = 0xFFFFFFFF;
// Default ceiling on one message's payload; larger declared sizes are rejected before anything
// is allocated.
inline constexpr std::uint64_t kDefaultMaxPayload = std::uint64_t{1} << 32;

using Bytes = std::vector<std::byte>;

struct Header {
  std::uint16_t type = 0;
  std::uint64_t job_id = 0;
  std::uint32_t rank = 0;
  std::uint32_t generation = 0;
  std::uint64_t step = 0;
  std::uint64_t payload_size = 0;
  std::uint16_t version = kProtocolVersion;
};

// What keeps frames read in place (Message::views) valid. Dropping its last copy gives their
// memory back to the sender; so does release(), for a reader done with them before it is done
// with the message (the views must not be read after it).
class Lease {
 public:
  virtual ~Lease() = default;
  virtual void release() noexcept = 0;
};

struct Message {
  Header header;
  std::vector<Bytes> payload;
  // A received message whose receiver asked for frames in place (Listener::receive_in_place):
  // views[i], when not empty, is payload frame i (payload[i] is then empty) where it lies in the
  // transport's memory, valid while `lease` lives. Empty otherwise.
  // A sender may set them too, for frames it lends instead of copying (the star coordinator's
  // parameters): every transport copies a frame during send(), so a lent frame is read only
  // there, and `lease` (when set) tells the lender which of its memory messages still hold.
  // The lender keeps a lent frame unchanged while its lease lives (the message may be sent
  // again). Read frames through frame().
  std::vector<std::span<const std::byte>> views;
  std::shared_ptr<Lease> lease;
};

// Payload frame i of `message`, wherever it lies (a view, else payload[i]).
[[nodiscard]] std::span<const std::byte> frame(const Message& message, std::size_t i);
// The payload frames' sizes added up, wherever they lie.
[[nodiscard]] std::uint64_t payload_total(const Message& message);

[[nodiscard]] Bytes encode_header(const Header& header);
// ProtocolError: "header frame is 12 bytes, expected 40", "bad magic 0x...: not a disttrain
// peer", "protocol version 7, this build speaks 1", "payload of 9999999999 bytes exceeds ..."
[[nodiscard]] Header decode_header(std::span<const std::byte> frame,
                                   std::uint64_t max_payload = kDefaultMaxPayload);
// The protocol version of a header frame from a build of any version; nullopt when the frame
// does not start with the magic (not a disttrain peer).
[[nodiscard]] std::optional<std::uint16_t> peek_version(std::span<const std::byte> frame);
// A header of this build's version and nothing else (type 0, which no exchange uses): sent once
// to a peer that speaks another version, so that its build can say so (peek_version there).
[[nodiscard]] Bytes version_notice();
// Checks that the payload frames add up to header.payload_size (ProtocolError otherwise).
void check_payload(const Message& message);
// The same check on sizes alone, before any frame is copied (the transport's receive path).
void check_payload(const Header& header, std::uint64_t frames_total, std::size_t frame_count);

// Payload helpers: doubles as raw little-endian frames; a frame whose size is not a multiple of
// 8, or not the expected count, is a ProtocolError.
[[nodiscard]] Bytes to_bytes(std::span<const double> values);
[[nodiscard]] Bytes to_bytes(std::string_view text);
[[nodiscard]] std::span<const double> as_doubles(std::span<const std::byte> frame,
                                                 std::size_t expected_count);
[[nodiscard]] std::span<const double> as_doubles(std::span<const std::byte> frame);
[[nodiscard]] std::string_view as_text(std::span<const std::byte> frame);

}  // namespace dt::wire
