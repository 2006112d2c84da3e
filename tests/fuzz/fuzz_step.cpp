// libFuzzer harness: the messages of the step path that a peer sends, beyond what fuzz_wire
// reaches (the setup exchanges and the shared accessors):
// - a peer chunk (worker -> worker, a piece of a ring all-reduce or a tensor-parallel
//   collective): collectives::parse_chunk, which PeerLinks runs on every arrival at a member's
//   listener, on the binary control frame; an accepted chunk must place its values inside its
//   vector and encode back to the same control frame; a compressed one (fp16 / bf16 frame)
//   decodes or is refused;
// - the step-path messages whose fields are lists, flags or records (core/protocol/
//   step_messages.hpp: a ring or group re-formed, the parameter servers and a moved server, the
//   rows an async survivor took over), and the number-and-array messages (a gradient, a push to
//   a server, a slice, a round, a reassigned share) through the fields each reader takes; a
//   push's frame also as a top-k frame (transports/topk_codec.hpp), added or refused.
//
// Input: the frames of one multipart message, as fuzz_wire's (tests/fuzz/wire_frames.hpp).
// tests/fuzz/corpus/fuzz_step/ holds real messages written by tests/unit/test_fuzz_seeds.cpp.

#include "core/protocol/step_messages.hpp"
#include "tests/fuzz/harness.hpp"
#include "tests/fuzz/wire_frames.hpp"
#include "transports/collectives/chunk_frames.hpp"
#include "transports/half_codec.hpp"
#include "transports/topk_codec.hpp"

#include <vector>

namespace {

namespace protocol = dt::protocol;
namespace collectives = dt::collectives;

void chunk(const dt::wire::Message& message) {
  const auto parsed = collectives::parse_chunk(message, dt::fuzz::kWireJob,
                                               collectives::peer_identity(message.header.rank));
  if (!parsed.why.empty()) return;
  const auto& place = parsed.place;
  dt::fuzz::expect(place.offset <= place.length && place.count <= place.length - place.offset,
                   "an accepted chunk lies inside its vector");
  const bool doubles = message.payload[1].size() == place.count * sizeof(double);
  dt::fuzz::expect(doubles || message.payload[1].size() == dt::wire::half_frame_size(place.count),
                   "an accepted chunk carries count doubles or a half frame of count values");
  if (doubles) {
    (void)dt::wire::as_doubles(message.payload[1], place.count);
  } else {  // aggregation.compression: decoded as either codec, or refused (ProtocolError)
    std::vector<double> out(place.count);
    for (const auto codec : {dt::wire::HalfCodec::kFp16, dt::wire::HalfCodec::kBf16}) {
      dt::fuzz::refusal_is_fine([&] { dt::wire::add_half(message.payload[1], codec, out); });
    }
  }
  dt::wire::Bytes control(collectives::kChunkControlSize);
  collectives::encode_chunk_control(control, parsed.key, place);
  dt::fuzz::expect(control == message.payload[0], "the control frame encodes back the same");
  // Another connection's name than the rank it claims: dropped.
  const auto other = collectives::parse_chunk(message, dt::fuzz::kWireJob,
                                              collectives::peer_identity(message.header.rank + 1));
  dt::fuzz::expect(!other.why.empty(), "a chunk claiming another sender is dropped");
}

void read_typed(const protocol::Envelope& e) {
  constexpr std::size_t kParameters = 4;
  switch (e.type) {
    case protocol::Type::kRingReform: (void)protocol::read_reform(e); break;
    case protocol::Type::kDone: (void)protocol::read_took(e); break;
    case protocol::Type::kServers: (void)protocol::read_servers(e); break;
    case protocol::Type::kServerMoved: (void)protocol::read_server_moved(e); break;
    case protocol::Type::kResumeState:
      if (protocol::flag(e, "available")) (void)protocol::doubles(e, 0, kParameters);
      break;
    case protocol::Type::kRound:
      (void)protocol::flag(e, "send_optimizer");
      (void)protocol::count_or(e, "steps", 0);
      (void)protocol::doubles(e, 0, kParameters);
      break;
    case protocol::Type::kPull:
      (void)protocol::count_or(e, "rejoin", 0);
      (void)protocol::flag(e, "awaiting");
      break;
    case protocol::Type::kPush:
      if (!e.arrays.empty()) {  // aggregation.compression {topk}: added, or refused
        std::vector<double> out(kParameters);
        dt::fuzz::refusal_is_fine([&] { dt::wire::add_topk(e.arrays[0], out); });
      }
      (void)protocol::count(e, "version");
      (void)protocol::count(e, "rows");
      (void)protocol::number(e, "loss_sum");
      (void)protocol::count_or(e, "steps", 0);
      (void)protocol::doubles(e, 0, kParameters);
      break;
    case protocol::Type::kReassign:
      (void)protocol::count(e, "share");
      (void)protocol::count(e, "shares");
      (void)protocol::count(e, "lost_rank");
      break;
    default:
      (void)protocol::count(e, "rows");
      (void)protocol::number(e, "loss_sum");
      (void)protocol::doubles(e, 0, kParameters);
      break;
  }
}

void one(std::string_view input) {
  auto message = dt::fuzz::read_message(input);
  if (!message) return;
  chunk(*message);
  if (message->header.type == collectives::kPeerChunkType) return;  // never a protocol message
  read_typed(protocol::decode(std::move(*message), dt::fuzz::kWireJob));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
