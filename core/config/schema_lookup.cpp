// The schema table's queries: the names a map may hold and the pattern of a child, for the
// parser's unknown-key errors and `--set` path checks (the table itself: schema.cpp).

#include "core/config/schema.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::config::schema {
namespace {

std::string join_path(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

}  // namespace

std::vector<std::string> children(std::string_view pattern) {
  const std::string prefix = pattern.empty() ? "" : fmt::format("{}.", pattern);
  std::vector<std::string> out;
  for (const Key& key : keys()) {
    if (!std::string_view(key.path).starts_with(prefix) || key.path.size() == prefix.size()) {
      continue;
    }
    const std::string_view rest = std::string_view(key.path).substr(prefix.size());
    std::string name(rest.substr(0, rest.find('.')));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  if (out.size() == 1 && out.front() == kMetricWildcard) return metrics();
  return out;
}

std::string child_pattern(std::string_view pattern, std::string_view name) {
  const std::string wildcard = join_path(pattern, kMetricWildcard);
  const bool is_wildcard = std::any_of(keys().begin(), keys().end(), [&](const Key& key) {
    return std::string_view(key.path).starts_with(wildcard + ".");
  });
  return is_wildcard ? wildcard : join_path(pattern, name);
}

}  // namespace dt::config::schema
