#include <fmt/format.h>

#include <algorithm>

#include "core/config/reader.hpp"
#include "core/config/schema.hpp"

namespace dt::config::detail {

Section::Section(const Reader& reader, const YAML::Node& root)
    : reader_(&reader), node_(root), anchor_(root) {
  if (!root.IsNull() && !root.IsMap()) {
    reader.fail_plain(
        root, "", fmt::format("expected a map of keys at the top level, got {}", describe(root)));
  }
  // yaml-cpp's operator= writes through to the shared node; reset() only rebinds ours.
  if (root.IsNull()) node_.reset(YAML::Node(YAML::NodeType::Undefined));
  check_keys();
}

Section::Section(const Reader& reader, const YAML::Node& node, std::string path,
                 std::string pattern, const YAML::Node& parent_anchor,
                 const std::string& parent_anchor_path)
    : reader_(&reader), node_(node), path_(std::move(path)), pattern_(std::move(pattern)) {
  if (node_.IsDefined()) {
    if (!node_.IsNull() && !node_.IsMap()) {
      reader.fail(node_, path_, fmt::format("expected a map, got {}", describe(node_)));
    }
    anchor_.reset(node_);
    anchor_path_ = path_;
  } else {
    anchor_.reset(parent_anchor);
    anchor_path_ = parent_anchor_path;
  }
  // `key:` with nothing after it reads as an empty section.
  if (node_.IsDefined() && node_.IsNull()) node_.reset(YAML::Node(YAML::NodeType::Undefined));
  check_keys();
}

Section Section::section(std::string_view key) const {
  return Section(*reader_, node(key), path(key), schema::child_pattern(pattern_, key), anchor_,
                 anchor_path_);
}

Section Section::item(std::string_view key, std::size_t index) const {
  const YAML::Node list = node(key);
  return Section(*reader_, list[index], fmt::format("{}[{}]", path(key), index),
                 schema::child_pattern(pattern_, key), list, path(key));
}

bool Section::has(std::string_view key) const { return node(key).IsDefined(); }

YAML::Node Section::node(std::string_view key) const {
  if (!node_.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& map = node_;  // const lookups never add the key
  return map[std::string(key)];
}

std::string Section::path(std::string_view key) const { return join_path(path_, key); }

std::vector<std::string> Section::keys() const {
  std::vector<std::string> out;
  if (!node_.IsDefined()) return out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

void Section::check_keys() const {
  if (!node_.IsDefined()) return;
  const std::vector<std::string> known = schema::children(pattern_);
  std::vector<std::string> seen;
  for (const auto& entry : node_) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      reader_->fail(key, path_, fmt::format("expected a key name, got {}", describe(key)));
    }
    const std::string& name = key.Scalar();
    const std::string full = path(name);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      reader_->fail_plain(key, full, unknown_key_message(path_, name, known));
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      // yaml-cpp keeps both entries and lookups see the first: say so instead of guessing.
      reader_->fail_plain(key, full, fmt::format("duplicate key '{}' (keep only one)", full));
    }
    seen.push_back(name);
  }
}

std::int64_t Section::integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                              std::int64_t max) const {
  return has(key) ? reader_->integer(node(key), path(key), min, max) : fallback;
}

double Section::number(std::string_view key, double fallback, Range range) const {
  return has(key) ? reader_->number(node(key), path(key), range) : fallback;
}

bool Section::boolean(std::string_view key, bool fallback) const {
  return has(key) ? reader_->boolean(node(key), path(key)) : fallback;
}

std::string Section::string(std::string_view key, std::string fallback) const {
  return has(key) ? reader_->string(node(key), path(key)) : std::move(fallback);
}

void Section::fail(std::string_view key, std::string_view what) const {
  if (has(key)) reader_->fail(node(key), path(key), what);
  raise(reader_->where(anchor_, anchor_path_), fmt::format("{}: {}", path(key), what));
}

void Section::fail_here(std::string_view what) const {
  raise(reader_->where(anchor_, anchor_path_),
        path_.empty() ? std::string(what) : fmt::format("{}: {}", path_, what));
}

void Section::fail_missing(std::string_view key, std::string_view hint) const {
  raise(reader_->where(anchor_, anchor_path_),
        fmt::format("missing required key '{}' ({})", path(key), hint));
}

void Section::fail_not_applicable(std::string_view key, std::string_view owner,
                                  std::string_view selector, std::string_view actual) const {
  fail(key, fmt::format("applies to {} only, but {} is {}; remove it", owner, selector, actual));
}

}  // namespace dt::config::detail
