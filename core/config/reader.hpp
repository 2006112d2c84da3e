#pragma once
// Reading the YAML tree into typed values with errors that say where, which key, what is
// wrong and what to do. Internal to core/config.
//
// Every message has the form "<where>: <key path>: <what>" (or "<where>: <what>" for unknown
// and missing keys), where <where> is "file:line:column" (1-based) for text from the config
// file and "--set key=value" for text from an override.

#include <yaml-cpp/yaml.h>

#include <array>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/enums.hpp"

namespace dt::config::detail {

enum class Range { kAny, kPositive, kNonNegative, kFraction };

// Remembers where each part of the tree came from and turns nodes into typed values.
// Overrides replace whole subtrees, so a key path at or below an override's path came from
// that override; everything else carries the line:column mark yaml-cpp recorded.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  // Records that `label` ("--set a.b=c") replaced the subtree at `key_path`.
  void note_override(const std::string& key_path, std::string label);
  [[nodiscard]] std::string where(const YAML::Node& node, std::string_view key_path) const;

  // "<where>: <key_path>: <what>"
  [[noreturn]] void fail(const YAML::Node& node, std::string_view key_path,
                         std::string_view what) const;
  // "<where>: <message>"
  [[noreturn]] void fail_plain(const YAML::Node& node, std::string_view key_path,
                               std::string_view message) const;

  [[nodiscard]] std::int64_t integer(const YAML::Node& node, std::string_view path,
                                     std::int64_t min, std::int64_t max) const;
  [[nodiscard]] double number(const YAML::Node& node, std::string_view path, Range range) const;
  [[nodiscard]] bool boolean(const YAML::Node& node, std::string_view path) const;
  // Any scalar; `non_empty` rejects "".
  [[nodiscard]] std::string string(const YAML::Node& node, std::string_view path,
                                   bool non_empty = true) const;
  // The index of the node's value in `names`.
  [[nodiscard]] std::size_t choice(const YAML::Node& node, std::string_view path,
                                   const std::vector<std::string>& names,
                                   const std::vector<std::string>& later) const;

 private:
  std::string origin_;
  std::vector<std::pair<std::string, std::string>> overrides_;  // key path, label; applied order
};

// A map of the config ("training", "data.synthetic", the top level) whose keys were checked
// against the schema table when it was constructed. An absent section reads as empty, and
// errors about it point at the closest present parent.
class Section {
 public:
  // The top level; fails unless `root` is a map.
  Section(const Reader& reader, const YAML::Node& root);
  Section(const Section&) = default;
  // Assigning a YAML::Node writes through to the node it shares; never assign a Section.
  Section& operator=(const Section&) = delete;

  [[nodiscard]] Section section(std::string_view key) const;
  // Item `index` of the list at `key`, a map named "<path.key>[index]" whose keys are checked
  // against the schema's `<key>.*` entries (`faults[1].action`).
  [[nodiscard]] Section item(std::string_view key, std::size_t index) const;
  [[nodiscard]] bool has(std::string_view key) const;
  // The value at `key`: undefined when absent.
  [[nodiscard]] YAML::Node node(std::string_view key) const;
  [[nodiscard]] std::string path(std::string_view key) const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const Reader& reader() const { return *reader_; }
  // The keys present, in file order.
  [[nodiscard]] std::vector<std::string> keys() const;

  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                                     std::int64_t max = INT_MAX) const;
  [[nodiscard]] double number(std::string_view key, double fallback, Range range) const;
  [[nodiscard]] bool boolean(std::string_view key, bool fallback) const;
  [[nodiscard]] std::string string(std::string_view key, std::string fallback) const;
  template <class E, std::size_t N, std::size_t L = 0>
  [[nodiscard]] E choice(std::string_view key, E fallback, const std::array<E, N>& values,
                         const std::array<const char*, L>& later = {}) const {
    if (!has(key)) return fallback;
    return values[reader_->choice(node(key), path(key), names_of(values),
                                  std::vector<std::string>(later.begin(), later.end()))];
  }

  // "<where of key>: <path.key>: <what>"
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;
  // "<where of this map>: <path>: <what>"
  [[noreturn]] void fail_here(std::string_view what) const;
  // "<where of this map>: missing required key '<path.key>' (<hint>)"
  [[noreturn]] void fail_missing(std::string_view key, std::string_view hint) const;
  // "<where of key>: <path.key>: applies to <owner> only, but <selector> is <actual>; remove it"
  [[noreturn]] void fail_not_applicable(std::string_view key, std::string_view owner,
                                        std::string_view selector, std::string_view actual) const;

 private:
  Section(const Reader& reader, const YAML::Node& node, std::string path, std::string pattern,
          const YAML::Node& parent_anchor, const std::string& parent_anchor_path);
  void check_keys() const;

  const Reader* reader_;
  YAML::Node node_;      // a map; undefined when the section is absent or null
  std::string path_;     // "training.optimizer"; "" at the top level
  std::string pattern_;  // the schema path: "expect.<metric>" for "expect.accuracy"
  YAML::Node anchor_;    // where errors about this map point: node_, or the closest present parent
  std::string anchor_path_;
};

// Throws ConfigError "<where>: <message>".
[[noreturn]] void raise(const std::string& where, std::string_view message);
[[nodiscard]] std::optional<std::int64_t> parse_integer(std::string_view text);
[[nodiscard]] std::optional<double> parse_number(std::string_view text);  // finite only
// How a value reads in "got ...": numbers bare (-1), other text quoted ('abc'), "a map",
// "a list", "an empty value".
[[nodiscard]] std::string describe(const YAML::Node& node);
// " (did you mean 'x'?)"-style suggestion target: the closest candidate by edit distance, or
// the only candidate that starts with `word` ("linear" -> "linear_regression"); "" if none.
[[nodiscard]] std::string suggest(std::string_view word,
                                  const std::vector<std::string>& candidates);
// "unknown key 'training.optimzer' (did you mean 'training.optimizer'?)"
[[nodiscard]] std::string unknown_key_message(std::string_view parent_path, std::string_view name,
                                              const std::vector<std::string>& known);
[[nodiscard]] std::string join_path(std::string_view parent, std::string_view name);

}  // namespace dt::config::detail
