// libFuzzer harness: a shared-memory ring as the reading process finds it
// (transports/shm/region.hpp). The writer is another process (a worker, the coordinator) that
// maps the same region: whatever it leaves there, positions and records alike, is outside input
// to the reader, which must report the ring corrupt or drop a bad message, never read past the
// ring, loop, or allocate without bound. RingReader::next() is run over the image until the
// ring is empty or corrupt, exactly as Listener and Connection run it over a mapped region.
//
// Input: tests/fuzz/ring_image.hpp (the two positions, then the ring's bytes).
// tests/fuzz/corpus/fuzz_shm_ring/ holds rings written by RingWriter (test_fuzz_seeds.cpp):
// messages, one that wraps around the end, a skip to the start and a marker.

#include "tests/fuzz/harness.hpp"
#include "tests/fuzz/ring_image.hpp"

namespace {

namespace shm = dt::transport::shm;

void one(std::string_view input) {
  auto image = dt::fuzz::RingImage::load(input);
  const std::uint64_t start = image->control.read_pos.load();
  const std::uint64_t write = image->control.write_pos.load();
  shm::RingReader reader(image->control, image->data.data(), dt::fuzz::kRingImageCapacity,
                         dt::wire::kDefaultMaxPayload);
  // Every record but a corrupt one moves the reader on by at least its 16-byte head, and at
  // most two rings' worth lies between the positions: more calls than this is a loop.
  const std::uint64_t bound = 2 * dt::fuzz::kRingImageCapacity / 16 + 2;
  std::uint64_t before = start;
  for (std::uint64_t calls = 0;; ++calls) {
    dt::fuzz::expect(calls <= bound, "the reader ends (empty or corrupt) within the ring");
    const auto next = reader.next();
    if (next.kind == shm::RingReader::Kind::kEmpty || next.kind == shm::RingReader::Kind::kCorrupt) {
      break;
    }
    const std::uint64_t now = image->control.read_pos.load();
    dt::fuzz::expect(now > before && now - start <= write - start,
                     "each record moves the reader forward, never past the writer");
    before = now;
    if (next.kind == shm::RingReader::Kind::kMessage) {
      dt::wire::check_payload(next.message);  // throws ProtocolError: a finding (not refused)
      std::uint64_t total = dt::wire::kHeaderSize;
      for (const auto& frame : next.message.payload) total += frame.size();
      dt::fuzz::expect(total == next.wire_bytes, "the counted bytes are the message's");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  one(dt::fuzz::text_of(data, size));  // the reader throws nothing: any exception is a finding
  return 0;
}
