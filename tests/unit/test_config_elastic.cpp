// fault_tolerance.elastic: defaults, the resolved config, and every refusal with its exact text.

#include <doctest/doctest.h>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

using namespace dt::config;

namespace {

constexpr const char* kHead = "version: 1\ndata: {path: a.csv}\nshards: {count: 4}\n";

std::string elastic_error(const std::string& body) {
  return dt::test::message_of<dt::ConfigError>(
      [&] { (void)dt::test::parse_text(std::string(kHead) + body); });
}

}  // namespace

TEST_CASE("config: fault_tolerance.elastic defaults to the starting size and round-trips") {
  const auto none = dt::test::parse_text(kHead);
  CHECK_FALSE(none.fault_tolerance.elastic.has_value());
  CHECK(to_yaml(none).find("elastic") == std::string::npos);  // other configs hash as before

  const auto c = dt::test::parse_text(std::string(kHead) + "fault_tolerance: {elastic: {}}\n");
  REQUIRE(c.fault_tolerance.elastic.has_value());
  CHECK(c.fault_tolerance.elastic->min_workers == 1);
  CHECK(c.fault_tolerance.elastic->max_workers == 4);  // shards.count
  CHECK(c.fault_tolerance.elastic->join_timeout_ms == 60000);
  const auto again = parse(to_yaml(c), "r.yaml", "/tmp");
  REQUIRE(again.fault_tolerance.elastic.has_value());
  CHECK(again.fault_tolerance.elastic->max_workers == 4);
  CHECK(config_hash(again) == config_hash(c));

  const auto set = dt::test::parse_text(
      std::string(kHead) +
      "fault_tolerance: {elastic: {min_workers: 2, max_workers: 8, join_timeout_ms: 250}}\n"
      "faults: [{rank: 1, at_step: 5, action: leave}]\n");
  CHECK(set.fault_tolerance.elastic->min_workers == 2);
  CHECK(set.fault_tolerance.elastic->max_workers == 8);
  CHECK(set.fault_tolerance.elastic->join_timeout_ms == 250);
  CHECK(set.faults.at(0).action == FaultAction::kLeave);
}

TEST_CASE("config: fault_tolerance.elastic is accepted over the ring and sharded servers") {
  const std::string elastic = "fault_tolerance: {elastic: {min_workers: 2}}\n";
  const auto ring = dt::test::parse_text(std::string(kHead) + "aggregation: {topology: ring}\n" +
                                         elastic);
  CHECK(ring.fault_tolerance.elastic.has_value());
  const auto servers =
      dt::test::parse_text(std::string(kHead) + "aggregation: {servers: 2}\n" + elastic);
  CHECK(servers.fault_tolerance.elastic.has_value());
}

TEST_CASE("config: fault_tolerance.elastic refusals name the key and what to do") {
  CHECK(elastic_error("fault_tolerance: {elastic: {min_workers: 5}}\n") ==
        "test.yaml:4:42: fault_tolerance.elastic.min_workers: is 5, above the 4 workers the run "
        "starts with (shards.count); set min_workers <= 4");
  CHECK(elastic_error("fault_tolerance: {elastic: {max_workers: 3}}\n") ==
        "test.yaml:4:42: fault_tolerance.elastic.max_workers: is 3, below the 4 workers the run "
        "starts with (shards.count); set max_workers >= 4");
  CHECK(elastic_error("fault_tolerance: {elastic: {min_workers: 0}}\n") ==
        "test.yaml:4:42: fault_tolerance.elastic.min_workers: expected a positive integer, got 0");
  CHECK(elastic_error("parallelism: {tensor: 2}\nfault_tolerance: {elastic: {}}\n") ==
        "test.yaml:5:28: fault_tolerance.elastic: is available with data parallelism only "
        "(parallelism.tensor 1), not with parallelism.tensor 2 yet; remove "
        "fault_tolerance.elastic (a lost worker is then handled by on_worker_failure)");
  for (const char* mode : {"{mode: parameters}", "{mode: async, servers: 2}", "{topology: ring}",
                           "{servers: 2}"}) {
    CAPTURE(mode);
    CHECK(dt::test::parse_text(std::string(kHead) + "aggregation: " + mode +
                               "\nfault_tolerance: {elastic: {}}\n")
              .fault_tolerance.elastic.has_value());
  }
  CHECK(elastic_error("transport: {type: inproc}\nfault_tolerance: {elastic: {}}\n") ==
        "test.yaml:5:28: fault_tolerance.elastic: needs worker processes (a worker leaves when "
        "it gets SIGTERM), but transport.type inproc runs the workers as threads of one "
        "process; use transport.type ipc or tcp");
  CHECK(elastic_error("faults: [{rank: 1, at_step: 5, action: leave}]\n") ==
        "test.yaml:4:40: faults[0].action: leave is a planned leave, which needs "
        "fault_tolerance.elastic (e.g. elastic: {min_workers: 1}); without it use kill to lose "
        "a worker");
  CHECK(elastic_error("fault_tolerance: {elastic: {min_worker: 2}}\n").find("did you mean") !=
        std::string::npos);
}

TEST_CASE("config: max_workers above the start: gradients over the ring and servers, not rounds") {
  const std::string elastic = "\nfault_tolerance: {elastic: {max_workers: 6}}\n";
  for (const char* mode :
       {"{topology: ring}", "{servers: 2}", "{mode: gradients}", "{mode: parameters}",
        "{mode: async, servers: 2}"}) {
    CAPTURE(mode);
    const auto c = dt::test::parse_text(std::string(kHead) + "aggregation: " + mode + elastic);
    CHECK(c.fault_tolerance.elastic->max_workers == 6);
    CHECK(admits_joiners(c));
  }
  CHECK(elastic_error("aggregation: {mode: async, servers: 2, async: {max_staleness: 2}}" +
                      elastic) ==
        "test.yaml:5:42: fault_tolerance.elastic.max_workers: is 6, above the 4 workers the run "
        "starts with: workers may join only in gradients mode (star, sharded servers, ring), "
        "parameters mode (at a round boundary) and async mode without max_staleness yet; set "
        "max_workers: 4 (leaving works in every mode)");
}

TEST_CASE("config: fault_tolerance.elastic.admit_at_steps round-trips; its refusals") {
  const auto c = dt::test::parse_text(
      std::string(kHead) + "fault_tolerance: {elastic: {max_workers: 6, admit_at_steps: [3, 40]}}\n");
  CHECK(c.fault_tolerance.elastic->admit_at_steps == std::vector<int>{3, 40});
  const auto again = parse(to_yaml(c), "r.yaml", "/tmp");
  CHECK(again.fault_tolerance.elastic->admit_at_steps == std::vector<int>{3, 40});
  CHECK(config_hash(again) == config_hash(c));
  CHECK(elastic_error("fault_tolerance: {elastic: {admit_at_steps: 4}}\n") ==
        "test.yaml:4:45: fault_tolerance.elastic.admit_at_steps: expected a list of steps like "
        "[40, 100], got 4");
  CHECK(elastic_error("fault_tolerance: {elastic: {admit_at_steps: [9, 2]}}\n")
            .find("fault_tolerance.elastic.admit_at_steps[1]") != std::string::npos);
}
