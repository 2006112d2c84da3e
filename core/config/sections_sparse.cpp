// data.sparse and data.hash: rows kept sparse in memory, and categorical CSV columns hashed into
// their keys (core/data/sparse_rows.hpp, core/data/hashed_csv.hpp).

#include "core/config/internal.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dt::config::detail {
namespace {

// Why 30: a model over 2^30 keys is 8 GiB of float64 weights per output before any optimizer
// state, the most one machine's coordinator or server can be expected to hold; and keys are
// 32-bit, so 2^30 buckets leave room for the numeric columns' keys after them.
constexpr std::int64_t kMaxHashBits = 30;

HashConfig parse_hash(const Section& s) {
  const Section h = s.section("hash");
  HashConfig c;
  if (!h.has("bits")) {
    h.fail_missing("bits", "the number of hash bits, 1 to 30: keys are 0 .. 2^bits - 1; 22 is "
                           "4M keys");
  }
  c.bits = static_cast<int>(h.integer("bits", 0, 1, kMaxHashBits));
  const auto names = [&](const YAML::Node& list, const std::string& path, const char* example) {
    if (!list.IsSequence() || list.size() == 0) {
      h.reader().fail(list, path, fmt::format("expected a list of column names like {}, got {}",
                                              example, describe(list)));
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(h.reader().string(list[i], fmt::format("{}[{}]", path, i)));
    }
    return out;
  };
  if (!h.has("columns")) {
    h.fail_missing("columns", "the categorical columns to hash, like [C1, C2]");
  }
  c.columns = names(h.node("columns"), h.path("columns"), "[C1, C2]");
  for (std::size_t i = 0; i < c.columns.size(); ++i) {
    if (std::find(c.columns.begin(), c.columns.begin() + static_cast<std::ptrdiff_t>(i),
                  c.columns[i]) != c.columns.begin() + static_cast<std::ptrdiff_t>(i)) {
      h.reader().fail(h.node("columns")[i], fmt::format("{}[{}]", h.path("columns"), i),
                      fmt::format("column '{}' is listed twice; list each column once",
                                  c.columns[i]));
    }
  }
  if (h.has("crosses")) {
    const YAML::Node list = h.node("crosses");
    if (!list.IsSequence()) {
      h.fail("crosses", fmt::format("expected a list of column pairs like [[C1, C2]], got {}",
                                    describe(list)));
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = fmt::format("{}[{}]", h.path("crosses"), i);
      const auto pair = names(list[i], path, "[C1, C2]");
      if (pair.size() != 2 || pair[0] == pair[1]) {
        h.reader().fail(list[i], path,
                        "a cross is two different columns, like [C1, C2] (a key from both "
                        "values); write one pair per cross");
      }
      c.crosses.emplace_back(pair[0], pair[1]);
    }
  }
  return c;
}

}  // namespace

void parse_sparse_keys(const Section& s, DataConfig& d, bool from_file) {
  if (s.has("sparse")) {
    const YAML::Node node = s.node("sparse");
    const std::string value = node.IsScalar() ? node.Scalar() : std::string();
    const std::vector<std::string> names = {"auto", "true", "false"};
    if (value == "auto") {
      d.sparse = SparseChoice::kAuto;
    } else if (value == "true" || value == "false") {
      d.sparse = value == "true" ? SparseChoice::kOn : SparseChoice::kOff;
    } else {
      s.fail("sparse", fmt::format("expected auto, true or false, got {}{}",
                                   node.IsScalar() ? "'" + value + "'" : describe(node),
                                   text::suggestion_suffix(value, names)));
    }
    if (!from_file) s.fail("sparse", "applies to data.path only (CSV or LIBSVM); remove it");
  }
  if (!s.has("hash")) return;
  if (!from_file) s.fail("hash", "applies to a CSV data.path only; remove it");
  if (d.format == DataFormat::kNpy || d.format == DataFormat::kNpz ||
      d.format == DataFormat::kLibsvm) {
    s.fail("hash", fmt::format("hashes text columns of a CSV; data.format is {}, whose values "
                               "are numbers: remove data.hash", name_of(d.format)));
  }
  if (!d.categorical.empty()) {
    s.fail("hash", "cannot be used with data.categorical; list the hashed columns in "
                   "data.hash.columns and remove data.categorical");
  }
  if (d.sparse == SparseChoice::kOff) {
    s.fail("hash", "makes sparse rows, but data.sparse is false; remove data.sparse: false (or "
                   "remove data.hash and encode the columns densely with data.categorical)");
  }
  d.hash = parse_hash(s);
}

}  // namespace dt::config::detail
