// config: aggregation.compression: its default (none, not written, so configs without it hash as
// before), the to_yaml round trip, and each refusal's exact text.

#include <doctest/doctest.h>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <yaml-cpp/yaml.h>

#include <string>

using namespace dt::config;

namespace {

std::string with_aggregation(const std::string& aggregation, const std::string& more = "") {
  return "version: 1\ndata: {path: a.csv}\naggregation: " + aggregation + "\n" + more;
}

std::string compression_error(const std::string& text) {
  return dt::test::message_of<dt::ConfigError>([&] { (void)dt::test::parse_text(text); });
}

}  // namespace

TEST_CASE("config compression: none by default and not written; fp16 and bf16 read back") {
  const Config plain = dt::test::parse_text(with_aggregation("{mode: gradients}"));
  CHECK(plain.aggregation.compression == WireCompression::kNone);
  CHECK_FALSE(YAML::Load(to_yaml(plain))["aggregation"]["compression"].IsDefined());
  for (const char* aggregation : {"{compression: fp16}", "{topology: ring, compression: bf16}",
                                  "{servers: 2, compression: fp16}",
                                  "{mode: parameters, compression: bf16}"}) {
    CAPTURE(aggregation);
    const Config c = dt::test::parse_text(with_aggregation(aggregation));
    CHECK(c.aggregation.compression != WireCompression::kNone);
    const Config again = dt::test::parse_text(to_yaml(c));
    CHECK(again.aggregation.compression == c.aggregation.compression);
    CHECK(config_hash(again) == config_hash(c));
    CHECK(config_hash(c) != config_hash(plain));
  }
}

TEST_CASE("config compression: each refusal names the key and what to use instead") {
  CHECK(compression_error(with_aggregation("{compression: fp8}")) ==
        "test.yaml:3:28: aggregation.compression: unknown value 'fp8' (expected none, fp16 or "
        "bf16)");
  CHECK(compression_error(with_aggregation("{mode: async, compression: bf16}")) ==
        "test.yaml:3:41: aggregation.compression: bf16 is not available with aggregation.mode "
        "async yet; use compression none with async, or mode gradients");
  const char* topk_parameters = "{mode: parameters, compression: {topk: {ratio: 0.1}}}";
  CHECK(compression_error(with_aggregation(topk_parameters))
            .find("topk compresses the gradients of aggregation.mode gradients; model averaging "
                  "(mode parameters) sends its models as fp16 or bf16 deltas only; use compression "
                  "fp16 or bf16 with mode parameters, or mode gradients") != std::string::npos);
  CHECK(compression_error(with_aggregation("{compression: fp16}", "parallelism: {tensor: 2}\n"))
            .find("fp16 is not available with parallelism.tensor > 1; use tensor: 1") !=
        std::string::npos);
  CHECK(compression_error("version: 1\ndata: {path: a.csv, hash: {bits: 4, columns: [a]}}\n"
                          "aggregation: {compression: fp16}\n")
            .find("sparse rows (data.hash, data.sparse) exchange keyed gradients that are not "
                  "compressed yet; use compression none with sparse rows") != std::string::npos);
}
