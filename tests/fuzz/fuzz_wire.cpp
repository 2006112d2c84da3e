// libFuzzer harness: a message from a peer, as a socket's receive path takes it apart
// (transports/zmq/zmq_socket.cpp Socket::parse, transports/shm): the header frame checked
// (wire::peek_version, decode_header), the payload sizes checked before anything is copied
// (check_payload), then protocol::decode and the typed reader of the shared exchanges
// (read_hello, read_setup and the config it carries, read_loaded, ...). The messages of the step
// path (gradients, ring, parameter servers) are read inside the modes, which the fuzz build
// leaves out: for them only the shared accessors (count, number, doubles) and the sparse key
// frames' decoder (decode_keys) are reached.
//
// Input: the frames of one multipart message, each a 4-byte little-endian length then its bytes
// (a length past the end takes what is left). Frame 0 is the 40-byte header.
// tests/fuzz/corpus/fuzz_wire/ holds real messages written by make_wire_seeds.cpp's encoders.

#include "core/protocol/key_frames.hpp"
#include "core/protocol/protocol.hpp"
#include "tests/fuzz/harness.hpp"
#include "tests/fuzz/wire_frames.hpp"

namespace {

namespace protocol = dt::protocol;

void read_typed(const protocol::Envelope& e) {
  constexpr std::size_t kFeatures = 3;
  switch (e.type) {
    case protocol::Type::kHello: (void)protocol::read_hello(e); break;
    case protocol::Type::kSetup: {
      const auto setup = protocol::read_setup(e);
      // A worker parses the resolved config it was sent.
      (void)dt::config::parse(setup.config_yaml, "setup message", "/");
      break;
    }
    case protocol::Type::kLoaded: (void)protocol::read_loaded(e, kFeatures); break;
    case protocol::Type::kFinalize: (void)protocol::read_finalize(e, kFeatures); break;
    case protocol::Type::kPeers: (void)protocol::read_peers(e); break;
    case protocol::Type::kError: (void)protocol::read_error(e); break;
    case protocol::Type::kReport: (void)protocol::read_report(e); break;
    default:
      // The fields every exchange reads, by the accessors every reader uses.
      (void)protocol::count(e, "rows");
      (void)protocol::number(e, "loss_sum");
      for (std::size_t i = 0; i < e.arrays.size(); ++i) (void)protocol::doubles(e, i);
      // A sparse exchange's key frame (key_frames.hpp), as a push or a pull carries it.
      if (!e.arrays.empty()) {
        std::vector<std::uint32_t> keys;
        protocol::decode_keys(e.arrays[0], std::uint64_t{1} << 24, "keys", keys);
      }
      break;
  }
}

void one(std::string_view input) {
  auto message = dt::fuzz::read_message(input);
  if (!message) return;
  const auto envelope = protocol::decode(std::move(*message), dt::fuzz::kWireJob);
  read_typed(envelope);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
