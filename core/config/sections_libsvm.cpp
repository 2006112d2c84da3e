// data.index_base, data.feature_count and data.max_dense_gib: how a LIBSVM data.path is read.

#include "core/config/internal.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dt::config::detail {

void parse_libsvm_keys(const Section& s, DataConfig& d, bool from_file) {
  for (const char* key : {"index_base", "feature_count", "max_dense_gib"}) {
    if (s.has(key) && !from_file) s.fail(key, "applies to a LIBSVM data.path only; remove it");
  }
  if (s.has("index_base")) {
    const std::string base = s.string("index_base", "auto");
    const std::vector<std::string> names = {"auto", "0", "1"};
    if (base == "auto") {
      d.index_base = -1;
    } else if (base == "0" || base == "1") {
      d.index_base = base == "1" ? 1 : 0;
    } else {
      s.fail("index_base", fmt::format("expected auto, 0 or 1, got '{}'{}", base,
                                       text::suggestion_suffix(base, names)));
    }
  }
  d.feature_count = s.integer("feature_count", d.feature_count, 1);
  d.max_dense_gib = s.number("max_dense_gib", d.max_dense_gib, Range::kPositive);
}

}  // namespace dt::config::detail
