// Top-k compression (aggregation.compression {topk: {ratio}}): k from the ratio, the selection
// (largest magnitude, ties to the lower index, NaN first), the frame (delta-encoded keys, exact
// float64 values; keys local to a server's range; an empty frame), its checks, the worker's error
// feedback, and the config's parsing and refusals.

#include "base/error.hpp"
#include "core/config/config.hpp"
#include "core/protocol/topk_feedback.hpp"
#include "tests/unit/harness.hpp"
#include "transports/topk_codec.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using dt::wire::Bytes;

std::vector<std::uint32_t> select(const std::vector<double>& values, std::size_t k) {
  std::vector<std::uint32_t> order;
  std::vector<std::uint32_t> out;
  dt::wire::select_topk(values, k, order, out);
  return out;
}

std::vector<double> decoded(const Bytes& frame, std::size_t n) {
  std::vector<double> out(n, 0.0);
  dt::wire::add_topk(frame, out);
  return out;
}

std::string topk_error(const std::string& aggregation) {
  return dt::test::message_of<dt::ConfigError>([&] {
    (void)dt::test::parse_text("version: 1\ndata: {path: a.csv}\naggregation: " + aggregation +
                               "\n");
  });
}

}  // namespace

TEST_CASE("topk: k = max(1, ceil(ratio * n)), at most n") {
  CHECK(dt::wire::topk_count(0.1, 675) == 68);  // 67.5 up
  CHECK(dt::wire::topk_count(0.1, 10) == 1);
  CHECK(dt::wire::topk_count(1e-9, 675) == 1);  // never nothing
  CHECK(dt::wire::topk_count(1.0, 675) == 675);
  CHECK(dt::wire::topk_count(0.5, 0) == 0);
}

TEST_CASE("topk: the largest magnitudes, ties to the lower index, NaN first, keys ascending") {
  const std::vector<double> v{1.0, -3.0, 2.0, 3.0, 0.5};
  CHECK(select(v, 1) == std::vector<std::uint32_t>{1});  // |-3| = |3|: the lower index
  CHECK(select(v, 2) == std::vector<std::uint32_t>{1, 3});
  CHECK(select(v, 3) == std::vector<std::uint32_t>{1, 2, 3});
  CHECK(select(v, 9) == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(select({1.0, nan, -7.0}, 1) == std::vector<std::uint32_t>{1});
  // All equal: the first k indices, whatever the length (nth_element's moves do not matter).
  CHECK(select(std::vector<double>(1000, 0.25), 3) == std::vector<std::uint32_t>{0, 1, 2});
}

TEST_CASE("topk: frame of delta-encoded keys and exact float64 values, decoded") {
  const std::vector<std::uint32_t> keys{0, 5, 200, 100000};
  const std::vector<double> values{0.1, -2.5, 1e-300, 7.0};
  Bytes frame;
  dt::wire::encode_topk(keys, values, 0, 100001, frame);
  // gaps 0, 4, 194, 99799: 1 + 1 + 2 + 3 varint bytes, then 8 bytes a value
  CHECK(frame.size() == dt::wire::kTopkFrameHeader + 7 + 8 * 4);
  const auto out = decoded(frame, 100001);
  CHECK(out[0] == 0.1);
  CHECK(out[5] == -2.5);
  CHECK(out[200] == 1e-300);
  CHECK(out[100000] == 7.0);
  CHECK(out[1] == 0.0);
  CHECK(dt::wire::topk_entries(frame, 100001) == 4);
  // add_topk adds (a receiver summing frames one after another).
  std::vector<double> sum(100001, 1.0);
  dt::wire::add_topk(frame, sum);
  CHECK(sum[5] == -1.5);
  CHECK(sum[6] == 1.0);
}

TEST_CASE("topk: a server's range gets keys local to it; a range with no entry, an empty frame") {
  dt::protocol::TopkFeedback f;
  f.select(std::vector<double>{0, 0, 9, 0, 0, 8, 0, 0}, 0.25);  // k = 2: keys 2 and 5
  REQUIRE(f.keys().size() == 2);
  Bytes first;
  Bytes second;
  Bytes third;
  f.encode(0, 3, first);
  f.encode(3, 5, second);
  f.encode(5, 8, third);
  CHECK(decoded(first, 3) == std::vector<double>{0, 0, 9});
  CHECK(second.size() == dt::wire::kTopkFrameHeader);
  CHECK(dt::wire::topk_entries(second, 2) == 0);
  CHECK(decoded(second, 2) == std::vector<double>{0, 0});
  CHECK(decoded(third, 3) == std::vector<double>{8, 0, 0});
}

TEST_CASE("topk: a damaged frame is a ProtocolError, never a read past it") {
  Bytes frame;
  dt::wire::encode_topk(std::vector<std::uint32_t>{1, 300}, std::vector<double>{1, 2}, 0, 400,
                        frame);
  CHECK_THROWS_AS(decoded(frame, 399), dt::ProtocolError);  // another length
  Bytes cut(frame.begin(), frame.end() - 1);
  CHECK_THROWS_AS(decoded(cut, 400), dt::ProtocolError);
  Bytes header(frame.begin(), frame.begin() + 8);
  CHECK_THROWS_AS(decoded(header, 400), dt::ProtocolError);
  Bytes past = frame;
  past[dt::wire::kTopkFrameHeader + 1] = std::byte{0xff};  // the second gap 16383: a key past
  past[dt::wire::kTopkFrameHeader + 2] = std::byte{0x7f};  // the 400 values
  CHECK_THROWS_AS(decoded(past, 400), dt::ProtocolError);
  Bytes codec = frame;
  codec[0] = std::byte{1};
  CHECK_THROWS_AS(decoded(codec, 400), dt::ProtocolError);
}

TEST_CASE("topk: error feedback keeps what was not sent and adds it to the next gradient") {
  dt::protocol::TopkFeedback f;
  const std::vector<double> g{1, 2, 3, 4};
  f.select(g, 0.25);  // k = 1
  CHECK(f.keys()[0] == 3);
  CHECK(f.values()[0] == 4);
  CHECK(std::vector<double>(f.residual().begin(), f.residual().end()) ==
        std::vector<double>{1, 2, 3, 0});
  f.select(g, 0.25);  // 2 4 6 4: key 2
  CHECK(f.keys()[0] == 2);
  CHECK(f.values()[0] == 6);
  f.select_none(4);  // a step without rows: nothing sent, nothing lost
  CHECK(f.keys().empty());
  CHECK(std::vector<double>(f.residual().begin(), f.residual().end()) ==
        std::vector<double>{2, 4, 0, 4});
  f.select(g, 0.25);  // 3 6 3 8: key 3; sent 4 + 6 + 8, kept 3 + 6 + 3: the 30 of three steps
  CHECK(f.keys()[0] == 3);
  CHECK(f.values()[0] == 8);
  f.set_residual({}, 4);  // a restarted worker, or a checkpoint without residuals: zero
  CHECK(std::vector<double>(f.residual().begin(), f.residual().end()) ==
        std::vector<double>{0, 0, 0, 0});
}

TEST_CASE("config topk: the map form, read back; each refusal names the key and what to do") {
  using dt::config::WireCompression;
  const auto c = dt::test::parse_text(
      "version: 1\ndata: {path: a.csv}\naggregation: {servers: 2, compression: {topk: {ratio: "
      "0.05}}}\n");
  CHECK(c.aggregation.compression == WireCompression::kTopk);
  CHECK(c.aggregation.topk_ratio == 0.05);
  const auto again = dt::test::parse_text(dt::config::to_yaml(c));
  CHECK(again.aggregation.compression == WireCompression::kTopk);
  CHECK(again.aggregation.topk_ratio == 0.05);
  CHECK(topk_error("{compression: {topk: {ratio: 0}}}") ==
        "test.yaml:3:43: aggregation.compression.topk.ratio: expected a number in (0, 1] (the "
        "share of the gradient's entries each worker sends), got 0");
  CHECK(topk_error("{compression: {topk: {ratio: 1.5}}}").find("expected a number in (0, 1]") !=
        std::string::npos);
  CHECK(topk_error("{compression: {topk: {}}}").find(
            "missing required key 'aggregation.compression.topk.ratio'") != std::string::npos);
  CHECK(topk_error("{compression: topk}").find(
            "topk needs its ratio: write compression: {topk: {ratio: 0.1}}") != std::string::npos);
  CHECK(topk_error("{compression: {top: {ratio: 0.1}}}").find("did you mean 'aggregation.compression.topk'") !=
        std::string::npos);
  CHECK(topk_error("{topology: ring, compression: {topk: {ratio: 0.1}}}")
            .find("aggregation.compression: topk does not compose with topology ring") !=
        std::string::npos);
}
