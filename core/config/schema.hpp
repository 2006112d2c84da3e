#pragma once
// The one table of config keys. It is the single source for the parser's known-key lists
// (unknown-key errors, did-you-mean), for `--set` path checks and for docs/config.md.
// Defaults themselves live in the structs of config.hpp; a unit test checks that the
// defaults written here match what to_yaml() emits for an empty config.

#include <string>
#include <string_view>
#include <vector>

namespace dt::config::schema {

struct Key {
  std::string path;          // "training.optimizer.lr"; "expect.<metric>.max" under the wildcard
  std::string type;          // Markdown, as shown in the docs
  std::string default_yaml;  // the default as YAML ("0.05", "[64]"); "" when it is not a literal
  std::string
      default_note;     // Markdown shown when default_yaml is "" ("required", "number of cores")
  std::string meaning;  // Markdown, one line
};

struct SectionDoc {
  std::string name;  // first path segment; "" for the top-level keys
  std::string description;
};

// Stands for any metric name in `expect.<metric>.min`: the names are in metrics().
inline constexpr std::string_view kMetricWildcard = "<metric>";

[[nodiscard]] const std::vector<Key>& keys();
[[nodiscard]] const std::vector<SectionDoc>& sections();
[[nodiscard]] const std::vector<std::string>& metrics();

// The names a map at `pattern` may hold, in table order ("" is the top level); the metric
// names under "expect". Empty when `pattern` is a value (or unknown).
[[nodiscard]] std::vector<std::string> children(std::string_view pattern);
// The schema pattern of child `name` of `pattern`: ("expect", "accuracy") -> "expect.<metric>".
[[nodiscard]] std::string child_pattern(std::string_view pattern, std::string_view name);

}  // namespace dt::config::schema
