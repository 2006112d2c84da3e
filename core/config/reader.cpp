#include "core/config/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/error.hpp"
#include "base/text.hpp"

namespace dt::config::detail {
namespace {

// True when `path` is `ancestor` or lies below it ("model.hidden[1]" is below "model.hidden").
bool is_within(std::string_view path, std::string_view ancestor) {
  if (ancestor.empty()) return true;
  if (!path.starts_with(ancestor)) return false;
  return path.size() == ancestor.size() || path[ancestor.size()] == '.' ||
         path[ancestor.size()] == '[';
}

std::string integer_rule(std::int64_t min) {
  if (min == 0) return "a non-negative integer";
  if (min == 1) return "a positive integer";
  return fmt::format("an integer >= {}", min);
}

std::string number_rule(Range range) {
  switch (range) {
    case Range::kAny:
      return "a number";
    case Range::kPositive:
      return "a number greater than 0";
    case Range::kNonNegative:
      return "a non-negative number";
    case Range::kFraction:
      return "a number in [0, 1)";
  }
  return "a number";
}

bool in_range(double value, Range range) {
  switch (range) {
    case Range::kAny:
      return true;
    case Range::kPositive:
      return value > 0;
    case Range::kNonNegative:
      return value >= 0;
    case Range::kFraction:
      return value >= 0 && value < 1;
  }
  return false;
}

}  // namespace

void raise(const std::string& where, std::string_view message) {
  dt::fail<ConfigError>("{}: {}", where, message);
}

void Reader::note_override(const std::string& key_path, std::string label) {
  // A later override of a parent replaces the subtree an earlier one wrote.
  std::erase_if(overrides_, [&](const auto& o) { return is_within(o.first, key_path); });
  overrides_.emplace_back(key_path, std::move(label));
}

std::string Reader::where(const YAML::Node& node, std::string_view key_path) const {
  const std::pair<std::string, std::string>* writer = nullptr;
  for (const auto& o : overrides_) {
    if (is_within(key_path, o.first) &&
        (writer == nullptr || o.first.size() > writer->first.size())) {
      writer = &o;
    }
  }
  if (writer != nullptr) return writer->second;
  if (node.IsDefined() && !node.Mark().is_null()) {
    return fmt::format("{}:{}:{}", origin_, node.Mark().line + 1, node.Mark().column + 1);
  }
  // A map without a mark was created by an override of a key inside it.
  if (!key_path.empty()) {
    for (const auto& o : overrides_) {
      if (is_within(o.first, key_path)) return o.second;
    }
  }
  return origin_;
}

void Reader::fail(const YAML::Node& node, std::string_view key_path, std::string_view what) const {
  raise(where(node, key_path), fmt::format("{}: {}", key_path, what));
}

void Reader::fail_plain(const YAML::Node& node, std::string_view key_path,
                        std::string_view message) const {
  raise(where(node, key_path), message);
}

std::int64_t Reader::integer(const YAML::Node& node, std::string_view path, std::int64_t min,
                             std::int64_t max) const {
  const auto value = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
  if (!value || *value < min) {
    fail(node, path, fmt::format("expected {}, got {}", integer_rule(min), describe(node)));
  }
  if (*value > max) {
    fail(node, path,
         fmt::format("expected {} no larger than {}, got {}", integer_rule(min), max, *value));
  }
  return *value;
}

double Reader::number(const YAML::Node& node, std::string_view path, Range range) const {
  const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
  if (!value || !in_range(*value, range)) {
    fail(node, path, fmt::format("expected {}, got {}", number_rule(range), describe(node)));
  }
  return *value;
}

bool Reader::boolean(const YAML::Node& node, std::string_view path) const {
  // Only the YAML 1.2 spellings: yaml-cpp would also take yes/no/on/off, which YAML 1.2
  // tools read as strings, so a file that relies on them means different things elsewhere.
  if (node.IsScalar() && node.Scalar() == "true") return true;
  if (node.IsScalar() && node.Scalar() == "false") return false;
  fail(node, path, fmt::format("expected true or false, got {}", describe(node)));
}

std::string Reader::string(const YAML::Node& node, std::string_view path, bool non_empty) const {
  if (!node.IsScalar()) fail(node, path, fmt::format("expected a string, got {}", describe(node)));
  if (non_empty && node.Scalar().empty()) fail(node, path, "expected a non-empty string, got ''");
  return node.Scalar();
}

std::size_t Reader::choice(const YAML::Node& node, std::string_view path,
                           const std::vector<std::string>& names,
                           const std::vector<std::string>& later) const {
  if (!node.IsScalar()) {
    fail(node, path, fmt::format("expected {}, got {}", text::join_or(names), describe(node)));
  }
  const std::string& value = node.Scalar();
  const auto it = std::find(names.begin(), names.end(), value);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  if (std::find(later.begin(), later.end(), value) != later.end()) {
    fail(node, path,
         fmt::format("'{}' is not available in this version; use {}", value, text::join_or(names)));
  }
  const std::string guess = suggest(value, names);
  fail(node, path,
       fmt::format("unknown value '{}' (expected {}{})", value, text::join_or(names),
                   guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess)));
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "an empty value";
  if (node.IsSequence()) return node.size() == 0 ? "an empty list" : "a list";
  if (node.IsMap()) return node.size() == 0 ? "an empty map" : "a map";
  const std::string& text = node.Scalar();
  return parse_number(text) ? text : fmt::format("'{}'", text);
}

std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best = text::did_you_mean(word, candidates);
  if (!best.empty() || word.size() < 2) return best;
  for (const auto& candidate : candidates) {
    if (!std::string_view(candidate).starts_with(word)) continue;
    if (!best.empty()) return {};  // ambiguous prefix: better no guess than a wrong one
    best = candidate;
  }
  return best;
}

std::string unknown_key_message(std::string_view parent_path, std::string_view name,
                                const std::vector<std::string>& known) {
  const std::string guess = suggest(name, known);
  if (!guess.empty()) {
    return fmt::format("unknown key '{}' (did you mean '{}'?)", join_path(parent_path, name),
                       join_path(parent_path, guess));
  }
  return fmt::format("unknown key '{}' (expected {})", join_path(parent_path, name),
                     text::join_or(known));
}

std::string join_path(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

}  // namespace dt::config::detail
