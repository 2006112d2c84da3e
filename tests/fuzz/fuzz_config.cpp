// libFuzzer harness: the run config, as `disttrain run/validate config.yaml --set k=v` reads it.
//
// Input: the first line is one override (the text after `--set`; "--fault <text>" for the text
// after `--fault`; empty for none), the rest is the YAML file. Both go through the product's
// entry points: config::parse_override / parse_fault_override, then config::parse, which
// config::load calls with the file's text (the YAML parser, the schema, the overrides, the
// cross-key checks).
//
// For an accepted config, the property the workers rely on: to_yaml (what the coordinator
// sends every worker and writes as config.resolved.yaml) reads back to the same config.

#include "core/config/config.hpp"
#include "tests/fuzz/harness.hpp"

#include <string>
#include <vector>

namespace {

constexpr std::string_view kFault = "--fault ";

void one(std::string_view input) {
  const auto newline = input.find('\n');
  const std::string line(input.substr(0, newline));
  const std::string yaml(newline == std::string_view::npos ? std::string_view{}
                                                             : input.substr(newline + 1));
  std::vector<dt::config::Override> overrides;
  if (line.starts_with(kFault)) {
    overrides.push_back(dt::config::parse_fault_override(line.substr(kFault.size())));
  } else if (!line.empty()) {
    overrides.push_back(dt::config::parse_override(line));
  }
  const auto config = dt::config::parse(yaml, "fuzz.yaml", "/fuzz", overrides);
  const std::string resolved = dt::config::to_yaml(config);
  std::string again;
  try {
    again = dt::config::to_yaml(dt::config::parse(resolved, "resolved.yaml", "/fuzz"));
  } catch (const dt::Error& e) {
    std::fprintf(stderr, "fuzz: the resolved config is refused: %s\n--- resolved:\n%s\n", e.what(),
                 resolved.c_str());
    dt::fuzz::expect(false, "to_yaml(config) reads back");
  }
  if (again != resolved) {
    std::fprintf(stderr, "--- resolved:\n%s\n--- read back and resolved again:\n%s\n",
                 resolved.c_str(), again.c_str());
    dt::fuzz::expect(false, "to_yaml(parse(to_yaml(config))) == to_yaml(config)");
  }
  (void)dt::config::config_hash(config);
  (void)dt::config::describe_aggregation(config);
  (void)dt::config::worker_count(config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dt::fuzz::refusal_is_fine([&] { one(dt::fuzz::text_of(data, size)); });
  return 0;
}
