// The seed corpus of tests/fuzz/fuzz_wire: real messages of this build, made by the protocol's own
// encoders. The test fails when the committed seeds are not what the encoders give today (a new
// protocol version would leave the fuzzer starting from messages every peer refuses at the
// header). To write them again:
//   DT_UPDATE_FUZZ_SEEDS=1 build/release/tests/dt_unit_tests -tc="fuzz seeds*"

#include "core/protocol/protocol.hpp"
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

}  // namespace

TEST_CASE("fuzz seeds: the wire corpus is what this build's encoders write") {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "../fuzz/corpus/fuzz_wire";
  const bool update = std::getenv("DT_UPDATE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, bytes] : seeds()) {
    CAPTURE(name);
    const auto path = dir / name;
    if (update) std::ofstream(path, std::ios::binary) << bytes;
    std::ifstream in(path, std::ios::binary);
    const std::string stored{std::istreambuf_iterator<char>(in), {}};
    CHECK_MESSAGE(stored == bytes, "tests/fuzz/corpus/fuzz_wire/", name,
                  " is stale: DT_UPDATE_FUZZ_SEEDS=1 build/release/tests/dt_unit_tests "
                  "-tc=\"fuzz seeds*\"");
  }
}
