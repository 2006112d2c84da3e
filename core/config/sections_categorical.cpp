// data.categorical: text columns encoded as numeric features (core/data/categorical.hpp).

#include <fmt/format.h>

#include "core/config/internal.hpp"

namespace dt::config::detail {

// data.categorical: {column: one_hot | hash | {hash: N}}.
std::vector<CategoricalColumn> categorical_entries(const Section& s) {
  constexpr std::int64_t kDefaultBuckets = 64;
  constexpr std::int64_t kMaxBuckets = 1 << 20;
  std::vector<CategoricalColumn> out;
  if (!s.has("categorical")) return out;
  const YAML::Node map = s.node("categorical");
  if (!map.IsMap() || map.size() == 0) {
    s.fail("categorical", fmt::format("expected a map of column: one_hot or hash, like "
                                      "{{color: one_hot, city: {{hash: 64}}}}, got {}",
                                      describe(map)));
  }
  const std::string key = s.path("categorical");
  for (const auto& entry : map) {
    const std::string column = s.reader().string(entry.first, key);
    const std::string path = key + "." + column;
    const YAML::Node value = entry.second;
    CategoricalColumn c{column, 0};
    if (value.IsMap() && value.size() == 1 && value["hash"]) {
      c.buckets = static_cast<std::uint64_t>(
          s.reader().integer(value["hash"], path + ".hash", 2, kMaxBuckets));
    } else if (value.IsScalar() && value.Scalar() == "hash") {
      c.buckets = kDefaultBuckets;
    } else if (!value.IsScalar() || value.Scalar() != "one_hot") {
      s.reader().fail(value, path,
                      fmt::format("expected one_hot, hash or {{hash: N}} (N buckets, 2 to {}), "
                                  "got {}",
                                  kMaxBuckets, describe(value)));
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace dt::config::detail
