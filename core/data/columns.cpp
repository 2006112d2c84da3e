// data.features and data.exclude: which columns of the source are the model's features.

#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace dt::data {
namespace {

std::optional<std::size_t> column_position(const std::vector<std::string>& columns,
                                           std::string_view name) {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) return std::nullopt;
  return static_cast<std::size_t>(it - columns.begin());
}

std::optional<std::size_t> column_number(std::string_view text) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// The columns one entry of data.features or data.exclude names, as [first, last] positions: a
// column name; else "A:B", both names (inclusive, in file order) or both 1-based numbers.
std::pair<std::size_t, std::size_t> resolve_entry(const std::vector<std::string>& columns,
                                                  const std::string& entry, const char* key,
                                                  const std::string& origin) {
  if (const auto at = column_position(columns, entry)) return {*at, *at};
  const auto colon = entry.find(':');
  if (colon != std::string::npos && entry.find(':', colon + 1) == std::string::npos) {
    const std::string_view a = std::string_view(entry).substr(0, colon);
    const std::string_view b = std::string_view(entry).substr(colon + 1);
    auto first = column_position(columns, a);
    auto last = column_position(columns, b);
    if (!first || !last) {
      const auto na = column_number(a);
      const auto nb = column_number(b);
      if (na && nb) {
        if (*na < 1 || *nb > columns.size() || *na > *nb) {
          fail<DataError>("{}: {}: range '{}' needs column numbers 1 <= first <= last <= {} "
                          "(the file has {} columns)",
                          origin, key, entry, columns.size(), columns.size());
        }
        return {*na - 1, *nb - 1};
      }
      const std::string_view missing = first ? b : a;
      fail<DataError>("{}: {}: range '{}': no column '{}'{}; a range is first:last, both column "
                      "names or both 1-based column numbers; columns are: {}",
                      origin, key, entry, missing,
                      text::suggestion_suffix(missing, columns), column_list(columns));
    }
    if (*first > *last) {
      fail<DataError>("{}: {}: range '{}' runs backwards ('{}' is column {}, '{}' column {}); "
                      "write it as {}:{}",
                      origin, key, entry, a, *first + 1, b, *last + 1, b, a);
    }
    return {*first, *last};
  }
  fail<DataError>("{}: {}: no column '{}'{}; columns are: {}", origin, key, entry,
                  text::suggestion_suffix(entry, columns), column_list(columns));
}

}  // namespace

std::string column_list(const std::vector<std::string>& columns) {
  constexpr std::size_t kShown = 20;
  std::string out;
  for (std::size_t i = 0; i < columns.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += columns[i];
  }
  if (columns.size() > kShown) out += fmt::format(", ... ({} columns)", columns.size());
  return out;
}

std::vector<std::string> select_features(const std::vector<std::string>& columns,
                                         std::size_t label_index,
                                         const std::vector<std::string>& features,
                                         const std::vector<std::string>& exclude,
                                         const std::string& origin) {
  const std::string& label = columns[label_index];
  // Columns listed by data.features (all when it is absent), then those data.exclude drops.
  std::vector<char> use(columns.size(), features.empty() ? 1 : 0);
  const auto mark = [&](const std::vector<std::string>& entries, const char* key, char value,
                        const char* what_to_do) {
    for (const auto& entry : entries) {
      const auto [first, last] = resolve_entry(columns, entry, key, origin);
      if (first == last && first == label_index) {
        fail<DataError>("{}: {}: '{}' is the label column; {} (or pick another label with "
                        "data.label)",
                        origin, key, label, what_to_do);
      }
      std::fill(use.begin() + static_cast<std::ptrdiff_t>(first),
                use.begin() + static_cast<std::ptrdiff_t>(last) + 1, value);
    }
  };
  mark(features, "data.features", 1, "list only feature columns");
  mark(exclude, "data.exclude", 0, "remove it from data.exclude");
  std::vector<std::string> out;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (use[c] && c != label_index) out.push_back(columns[c]);  // a range may span the label
  }
  if (out.empty()) {
    fail<DataError>("{}: no feature columns are left after data.features and data.exclude "
                    "(the label is '{}'); columns are: {}",
                    origin, label, column_list(columns));
  }
  return out;
}

}  // namespace dt::data
