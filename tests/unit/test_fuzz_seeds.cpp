// The seed corpora of tests/fuzz/fuzz_wire and fuzz_step: real messages of this build, made by
// the protocol's own encoders (and, for the step path, with the fields the modes send). The test
// fails when the committed seeds are not what the encoders give today (a new
// protocol version would leave the fuzzer starting from messages every peer refuses at the
// header). To write them again:
//   DT_UPDATE_FUZZ_SEEDS=1 build/release/tests/dt_unit_tests -tc="fuzz seeds*"

#include "core/protocol/protocol.hpp"
#include "transports/collectives/chunk_frames.hpp"
#include "tests/fuzz/ring_image.hpp"
#include "tests/fuzz/wire_frames.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

namespace {

namespace protocol = dt::protocol;

std::string frames_of(protocol::Envelope e) {
  const auto m = protocol::encode(std::move(e), dt::fuzz::kWireJob);
  std::vector<std::string> frames;
  const auto head = dt::wire::encode_header(m.header);
  frames.emplace_back(reinterpret_cast<const char*>(head.data()), head.size());
  for (const auto& f : m.payload) {
    frames.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
  }
  return dt::fuzz::join_frames(frames);
}

std::map<std::string, std::string> seeds() {
  std::map<std::string, std::string> out;
  out["hello"] = frames_of(protocol::make_hello({.rank = 1, .pid = 4242, .host = "node-a",
                                                 .config_hash = "0123456789abcdef"}));
  protocol::Setup setup;
  setup.config_yaml = dt::config::to_yaml(dt::test::parse_text(
      "version: 1\ndata: {path: data.csv}\nmodel: {type: logistic_regression}\n"
      "output: {dir: /tmp/run}\n"));  // absolute: the resolved text must not depend on the cwd
  setup.heartbeat_endpoint = "ipc:///tmp/disttrain-x/hb.sock";
  setup.source.columns = {"a", "b", "c", "target"};
  setup.source.features = {"a", "b", "c"};
  setup.source.label = "target";  // "y" set off GCC 12's false -Wrestrict here
  setup.source.label_index = 3;
  setup.source.rows = 8;
  setup.segments = {{.first_row = 0, .count = 4, .byte_offset = 8, .line = 2}};
  out["setup"] = frames_of(protocol::make_setup(setup));
  protocol::Loaded loaded;
  loaded.rows = 4;
  loaded.stats = {
      .count = 4, .mean = {1, 2, 3}, .m2 = {1, 1, 1}, .min = {0, 1, 2}, .max = {2, 3, 4}};
  loaded.labels = {"cat", "dog"};
  out["loaded"] = frames_of(protocol::make_loaded(loaded));
  protocol::Finalize finalize;
  finalize.normalization = {.kind = dt::config::Normalize::kStandard,
                            .shift = {1, 2, 3}, .scale = {1, 0.5, 2}, .constant_columns = {}};
  finalize.classes = {"cat", "dog"};
  finalize.train_rows = 8;
  finalize.steps_per_epoch = 2;
  out["finalize"] = frames_of(protocol::make_finalize(finalize));
  out["peers"] = frames_of(protocol::make_peers({"tcp://10.0.0.1:5000", "tcp://10.0.0.2:5001"}));
  out["error"] = frames_of(protocol::make_error({.kind = "data", .message = "data.csv:3:1: bad",
                                                 .exit_code = 2}));
  out["report"] = frames_of(protocol::make_report({.steps = 10, .compute_seconds = 0.5,
                                                   .comm_seconds = 0.25, .bytes_sent = 100,
                                                   .bytes_received = 200,
                                                   .step_seconds_percentiles = {1, 2, 3, 4},
                                                   .max_rss_bytes = 1 << 20}));
  // A step's reply: JSON fields and one array of doubles, as the modes send.
  protocol::Envelope gradient{.type = protocol::Type::kGradient, .rank = 2, .step = 7};
  gradient.fields = {{"rows", 32}, {"loss_sum", 1.5}};
  const std::vector<double> values{0.25, -1.0, 3.5, 0.0};
  gradient.arrays.push_back(dt::wire::to_bytes(values));
  out["gradient"] = frames_of(std::move(gradient));
  return out;
}

protocol::Envelope fuzz_seed_with_values(protocol::Envelope e, nlohmann::json fields) {
  e.fields = std::move(fields);
  const std::vector<double> values{0.5, -2.0, 1.25, 8.0};
  e.arrays.push_back(dt::wire::to_bytes(values));
  return e;
}

// The step path: a peer chunk (its binary control frame) and the messages whose fields the
// readers of core/protocol/step_messages.hpp and the modes take.
std::map<std::string, std::string> step_seeds() {
  using protocol::Type;
  std::map<std::string, std::string> out;
  {
    dt::wire::Message chunk;
    chunk.header = {.type = dt::collectives::kPeerChunkType, .job_id = dt::fuzz::kWireJob,
                    .rank = 1, .step = 3};
    chunk.payload.resize(2);
    chunk.payload[0].resize(dt::collectives::kChunkControlSize);
    dt::collectives::encode_chunk_control(chunk.payload[0], {.group = 77, .phase = 1, .chunk = 0},
                                          {.length = 8, .offset = 4, .count = 2});
    const std::vector<double> values{1.5, -0.25};
    chunk.payload[1] = dt::wire::to_bytes(values);
    chunk.header.payload_size = chunk.payload[0].size() + chunk.payload[1].size();
    const auto head = dt::wire::encode_header(chunk.header);
    std::vector<std::string> frames{std::string(reinterpret_cast<const char*>(head.data()), head.size())};
    for (const auto& f : chunk.payload) frames.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
    out["peer-chunk"] = dt::fuzz::join_frames(frames);
  }
  out["ring-reform"] = frames_of({.type = Type::kRingReform, .step = 5, .generation = 1,
                                  .fields = {{"members", {0, 2, 3}}, {"fresh", {3}},
                                             {"endpoints", {"tcp://a:1", "tcp://b:2", "tcp://c:3",
                                                            "tcp://d:4"}}}});
  out["done"] = frames_of({.type = Type::kDone, .rank = 2,
                           .fields = {{"took", {{{"lost_rank", 1}, {"rows", 250}, {"from_epoch", 3}}}}}});
  out["servers"] = frames_of({.type = Type::kServers,
                              .fields = {{"endpoints", {"tcp://a:1", "tcp://a:2"}}, {"parameters", 4}}});
  out["server-moved"] = frames_of({.type = Type::kServerMoved,
                                   .fields = {{"server", 1}, {"endpoint", "tcp://a:9"}, {"version", 40}}});
  out["resume-state"] = frames_of(fuzz_seed_with_values({.type = Type::kResumeState, .rank = 0, .step = 6},
                                              {{"available", true}, {"optimizer_steps", 6},
                                               {"optimizer_slots", 0}}));
  out["round"] = frames_of(fuzz_seed_with_values({.type = Type::kRound, .step = 2},
                                       {{"send_optimizer", true}, {"steps", 10}}));
  out["pull"] = frames_of({.type = Type::kPull, .rank = 1, .fields = {{"rejoin", 12}, {"awaiting", true}}});
  out["push"] = frames_of(fuzz_seed_with_values({.type = Type::kPush, .rank = 1, .step = 9},
                                      {{"version", 8}, {"rows", 32}, {"loss_sum", 3.5}, {"steps", 40}}));
  out["reassign"] = frames_of({.type = Type::kReassign, .rank = 2,
                               .fields = {{"share", 0}, {"shares", 2}, {"lost_rank", 1},
                                          {"from_epoch", 4}}});
  // What a hostile peer could send: counts as doubles past 2^64, negative or of another type
  // (read before as JSON library exceptions or casts out of range; now ProtocolErrors).
  out["hostile-reform"] = frames_of({.type = Type::kRingReform, .step = 5,
                                     .fields = {{"members", {0, -1}}, {"fresh", {1e300}},
                                                {"endpoints", 5}}});
  out["hostile-done"] = frames_of({.type = Type::kDone, .rank = 2,
                                   .fields = {{"took", {7, {{"lost_rank", 2.5}}}}}});
  out["hostile-servers"] = frames_of({.type = Type::kServers,
                                      .fields = {{"endpoints", {1, 2}}, {"parameters", -4}}});
  return out;
}

// A message of `doubles` values into `writer`'s ring (as the shared-memory transport sends).
dt::transport::shm::RingWriter::Result ring_message(dt::transport::shm::RingWriter& writer,
                                                    std::uint16_t type, std::size_t doubles) {
  dt::wire::Message m;
  m.header = {.type = type, .job_id = dt::fuzz::kWireJob, .rank = 1, .step = 4};
  m.payload.push_back(dt::wire::to_bytes(std::string_view(R"({"rows":32,"loss_sum":1.5})")));
  m.payload.push_back(dt::wire::to_bytes(std::vector<double>(doubles, 0.75)));
  m.header.payload_size = m.payload[0].size() + m.payload[1].size();
  return writer.write(dt::wire::encode_header(m.header), m, m.header.payload_size);
}

// Rings as RingWriter leaves them for a reader: two messages; records that wrap around the
// ring's end; a skip back to the start of an empty ring; a marker for a message that did not fit.
std::map<std::string, std::string> ring_seeds() {
  using dt::fuzz::RingImage;
  using Result = dt::transport::shm::RingWriter::Result;
  std::map<std::string, std::string> out;
  const auto image_at = [](std::uint64_t pos) {
    auto image = RingImage::load({});
    image->control.write_pos.store(pos);
    image->control.read_pos.store(pos);
    return image;
  };
  {
    auto image = image_at(0);
    dt::transport::shm::RingWriter writer(image->control, image->data.data(), dt::fuzz::kRingImageCapacity);
    REQUIRE(ring_message(writer, 7, 4) == Result::kWritten);
    REQUIRE(ring_message(writer, 14, 0) == Result::kWritten);
    out["two-messages"] = image->save();
  }
  {
    auto image = image_at(1000);
    dt::transport::shm::RingWriter writer(image->control, image->data.data(), dt::fuzz::kRingImageCapacity);
    for (int i = 0; i < 5; ++i) REQUIRE(ring_message(writer, 7, 80) == Result::kWritten);
    REQUIRE(image->control.write_pos.load() > dt::fuzz::kRingImageCapacity);  // it wrapped
    out["wrapped"] = image->save();
  }
  {
    auto image = image_at(3000);  // empty and past half the ring: the writer skips to its start
    dt::transport::shm::RingWriter writer(image->control, image->data.data(), dt::fuzz::kRingImageCapacity);
    REQUIRE(ring_message(writer, 7, 8) == Result::kWritten);
    out["skip"] = image->save();
  }
  {
    auto image = image_at(0);
    dt::transport::shm::RingWriter writer(image->control, image->data.data(), dt::fuzz::kRingImageCapacity);
    REQUIRE(ring_message(writer, 7, 200) == Result::kWritten);
    REQUIRE(ring_message(writer, 7, 600) == Result::kMarked);
    REQUIRE(ring_message(writer, 14, 1) == Result::kWritten);
    out["marker"] = image->save();
  }
  return out;
}

void check_fuzz_corpus(const char* harness, const std::map<std::string, std::string>& wanted) {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "../fuzz/corpus" / harness;
  const bool update = std::getenv("DT_UPDATE_FUZZ_SEEDS") != nullptr;
  if (update) std::filesystem::create_directories(dir);
  for (const auto& [name, bytes] : wanted) {
    CAPTURE(name);
    const auto path = dir / name;
    if (update) std::ofstream(path, std::ios::binary) << bytes;
    std::ifstream in(path, std::ios::binary);
    const std::string stored{std::istreambuf_iterator<char>(in), {}};
    CHECK_MESSAGE(stored == bytes, "tests/fuzz/corpus/", harness, "/", name,
                  " is stale: DT_UPDATE_FUZZ_SEEDS=1 build/release/tests/dt_unit_tests "
                  "-tc=\"fuzz seeds*\"");
  }
}

}  // namespace

TEST_CASE("fuzz seeds: the wire corpus is what this build's encoders write") {
  check_fuzz_corpus("fuzz_wire", seeds());
}

TEST_CASE("fuzz seeds: the shared-memory ring corpus is what this build's RingWriter leaves") {
  check_fuzz_corpus("fuzz_shm_ring", ring_seeds());
}

TEST_CASE("fuzz seeds: the step corpus is what this build's encoders write") {
  check_fuzz_corpus("fuzz_step", step_seeds());
}
