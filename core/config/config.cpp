// The entry points: text -> YAML tree -> overrides -> validated Config.

#include "core/config/config.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <yaml-cpp/depthguard.h>

#include "core/config/internal.hpp"
#include "base/error.hpp"
#include "base/files.hpp"

namespace dt::config {
namespace {

// A config is a few kilobytes; the bound keeps an endless or huge file from filling memory.
constexpr std::uint64_t kMaxConfigBytes = 16 << 20;

// The whole file, or ConfigError with the reason ("No such file or directory", "it is a FIFO
// (named pipe), not a regular file ...").
std::string read_config(const std::filesystem::path& path) {
  try {
    return files::read_all(path, kMaxConfigBytes);
  } catch (const files::UnreadableFile& e) {
    fail<ConfigError>("cannot read config '{}': {}", path.string(), e.reason());
  }
}

YAML::Node load_yaml(const std::string& text, const std::string& origin) {
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(text);
    if (documents.empty()) return YAML::Node();
    // A second document was silently ignored once: a config is one document (an empty one
    // after a closing '---' is harmless).
    const auto second = std::find_if(documents.begin() + 1, documents.end(),
                                     [](const YAML::Node& d) { return !d.IsNull(); });
    if (second != documents.end()) {
      const YAML::Mark at = second->Mark();
      const std::string where =
          at.is_null() ? origin : fmt::format("{}:{}:{}", origin, at.line + 1, at.column + 1);
      fail<ConfigError>("{}: a second YAML document (after '---'); a config is one document: "
                        "merge the two, or put the second in a file of its own",
                        where);
    }
    return documents.front();
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own text is "bad file", and its mark the end of the nesting, not the level
    // past the limit: the file alone says where.
    fail<ConfigError>("{}: invalid YAML: nested more than {} levels deep (a config nests a few "
                      "levels at the most)",
                      origin, e.depth() - 1);
  } catch (const YAML::Exception& e) {
    // e.what() has yaml-cpp's own "yaml-cpp: error at line 5, column 3:" prefix; ours is the
    // same position in the form every other message uses.
    if (e.mark.is_null()) fail<ConfigError>("{}: invalid YAML: {}", origin, e.msg);
    fail<ConfigError>("{}:{}:{}: invalid YAML: {}", origin, e.mark.line + 1, e.mark.column + 1,
                      e.msg);
  }
}

}  // namespace

Config load(const std::filesystem::path& path, const std::vector<Override>& overrides) {
  const std::string text = read_config(path);
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  Config config = parse(text, path.string(), folder, overrides);
  config.source = path;
  return config;
}

Config parse(const std::string& yaml_text, const std::string& origin,
             const std::filesystem::path& base_dir, const std::vector<Override>& overrides) {
  YAML::Node root = load_yaml(yaml_text, origin);
  detail::Reader reader(origin);
  if (root.IsNull()) {
    root.reset(YAML::Node(YAML::NodeType::Map));  // an empty file: every key is missing
  } else if (!root.IsMap()) {
    reader.fail_plain(
        root, "",
        fmt::format("expected a map of keys at the top level, got {}", detail::describe(root)));
  }
  detail::apply_overrides(root, overrides, reader);
  return detail::build(detail::Section(reader, root), base_dir);
}

}  // namespace dt::config
