// `--set key.path=value`: written into the YAML tree before validation, so an override is
// checked exactly like the same text in the file and errors name the override.

#include <fmt/format.h>

#include <algorithm>

#include "core/config/internal.hpp"
#include "core/config/schema.hpp"
#include "base/error.hpp"

namespace dt::config {

Override parse_override(const std::string& text) {
  const auto eq = text.find('=');
  const auto first = text.find_first_not_of(" \t");
  const auto last = eq == std::string::npos ? 0 : text.find_last_not_of(" \t", eq - 1);
  if (eq == std::string::npos || first >= eq || last == std::string::npos) {
    fail<UsageError>("--set expects key.path=value, got '{}'", text);
  }
  return {text.substr(first, last - first + 1), text.substr(eq + 1)};
}

Override parse_fault_override(const std::string& text) {
  // rank=2,at_step=40,action=kill reads as the YAML map {rank: 2, at_step: 40, action: kill}.
  std::string yaml = text;
  const auto first = text.find_first_not_of(" \t");
  if (first != std::string::npos && text[first] != '{') {
    yaml = "{";
    std::size_t start = 0;
    for (;;) {
      const auto comma = text.find(',', start);
      std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                        : comma - start);
      const auto eq = part.find('=');
      if (eq == std::string::npos) {
        fail<UsageError>("--fault expects key=value pairs like rank=2,at_step=40,action=kill, "
                         "got '{}'",
                         text);
      }
      yaml += fmt::format("{}{}: {}", start == 0 ? "" : ", ", part.substr(0, eq),
                          part.substr(eq + 1));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    yaml += "}";
  }
  return {std::string(kFaultOverride), yaml};
}

namespace detail {
namespace {

std::vector<std::string> split_path(const std::string& key_path) {
  std::vector<std::string> segments;
  std::size_t start = 0;
  for (;;) {
    const auto dot = key_path.find('.', start);
    segments.push_back(key_path.substr(start, dot - start));
    if (dot == std::string::npos) return segments;
    start = dot + 1;
  }
}

// Every segment must name a key the schema knows, so a typo fails before the tree changes.
void check_path(const std::vector<std::string>& segments, const std::string& label) {
  std::string pattern;
  std::string path;
  for (const std::string& segment : segments) {
    if (segment.empty()) raise(label, "expected a key path like training.optimizer.lr");
    const std::vector<std::string> known = schema::children(pattern);
    if (known.empty()) {
      raise(label, fmt::format("'{}' is a value, not a section; use --set {}=<value>", path, path));
    }
    if (std::find(known.begin(), known.end(), segment) == known.end()) {
      raise(label, unknown_key_message(path, segment, known));
    }
    pattern = schema::child_pattern(pattern, segment);
    path = join_path(path, segment);
  }
}

// The map at `map[key]`, created when absent or empty.
YAML::Node child_map(YAML::Node& map, const std::string& key, const std::string& path,
                     const Reader& reader) {
  const YAML::Node& view = map;  // const lookups never add the key
  if (const YAML::Node existing = view[key]; existing.IsDefined() && !existing.IsNull()) {
    if (!existing.IsMap()) {
      reader.fail(existing, path, fmt::format("expected a map, got {}", describe(existing)));
    }
    return existing;
  }
  map[key] = YAML::Node(YAML::NodeType::Map);
  return view[key];
}

YAML::Node parse_value(const Override& o, const std::string& label) {
  // A lone "-" would read as a list of one null; on the command line it means stdin.
  if (o.value == "-") return YAML::Node("-");
  try {
    return YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    raise(label, fmt::format("invalid YAML: {}", e.msg));
  }
}

// --fault: appends one map to the `faults` list.
void append_fault(YAML::Node& root, const Override& o, Reader& reader) {
  const std::string label = fmt::format("--fault {}", o.value);
  const YAML::Node value = parse_value(o, label);
  if (!value.IsMap()) {
    raise(label, "expected a fault like rank=2,at_step=40,action=kill or "
                 "'{rank: 2, at_step: 40, action: kill}'");
  }
  const YAML::Node& view = root;  // const lookups never add the key
  if (const YAML::Node existing = view["faults"]; !existing.IsDefined() || existing.IsNull()) {
    root["faults"] = YAML::Node(YAML::NodeType::Sequence);
  }
  YAML::Node list = view["faults"];
  if (!list.IsSequence()) reader.fail(list, "faults", "expected a list of faults");
  reader.note_override(fmt::format("faults[{}]", list.size()), label);
  list.push_back(value);
}

}  // namespace

void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides, Reader& reader) {
  for (const Override& o : overrides) {
    if (o.key_path == kFaultOverride) {
      append_fault(root, o, reader);
      continue;
    }
    const std::string label = fmt::format("--set {}={}", o.key_path, o.value);
    const std::vector<std::string> segments = split_path(o.key_path);
    check_path(segments, label);
    const YAML::Node value = parse_value(o, label);
    YAML::Node map = root;  // shares root's node; reset() below rebinds without writing
    std::string path;
    for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
      path = join_path(path, segments[i]);
      map.reset(child_map(map, segments[i], path, reader));
    }
    map[segments.back()] = value;
    reader.note_override(o.key_path, label);
  }
}

}  // namespace detail
}  // namespace dt::config
