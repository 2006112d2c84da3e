// The entry points: text -> YAML tree -> overrides -> validated Config.

#include "core/config/config.hpp"

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

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

// The root of each document of a YAML stream, as the parser reports it, without building the
// documents.
class DocumentRoots : public YAML::EventHandler {
 public:
  YAML::Mark start;  // where the document starts
  YAML::Mark root;   // where its root value starts
  bool empty = true;  // the root is null: nothing but '---', or no value at all

  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    seen_ = false;
    empty = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { value(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { value(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    value(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    value(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    value(mark, false);
  }
  void OnMapEnd() override {}

 private:
  void value(const YAML::Mark& mark, bool null) {
    if (seen_) return;
    seen_ = true;
    root = mark;
    empty = null;
  }
  bool seen_ = false;
};

// A config is one document. A second one was silently ignored once (an empty one after a
// closing '---' is harmless). The documents are walked here rather than with YAML::LoadAll:
// yaml-cpp 0.7 (Debian bookworm's) loops forever in LoadAll on some invalid text (a line that is
// just ","): each pass reports another empty document at the same place without moving on, and
// the list of documents grows until memory runs out (fixed in yaml-cpp 0.8). Two documents
// never start at the same place, so that is where this stops.
void check_one_document(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentRoots doc;
  std::optional<YAML::Mark> previous;
  for (int count = 1; parser.HandleNextDocument(doc); ++count) {
    const auto at = [&](const YAML::Mark& m) {
      return m.is_null() ? origin : fmt::format("{}:{}:{}", origin, m.line + 1, m.column + 1);
    };
    if (previous && doc.start.pos == previous->pos) {
      const auto pos = static_cast<std::size_t>(doc.start.pos);
      const auto c = pos < text.size() ? static_cast<unsigned char>(text[pos]) : 0;
      fail<ConfigError>("{}: invalid YAML: unexpected {}", at(doc.start),
                        pos >= text.size()          ? std::string("end of file")
                        : c >= 0x20 && c < 0x7F ? fmt::format("'{}'", static_cast<char>(c))
                                                : fmt::format("byte 0x{:02x}", c));
    }
    previous = doc.start;
    if (count > 1 && !doc.empty) {
      fail<ConfigError>("{}: a second YAML document (after '---'); a config is one document: "
                        "merge the two, or put the second in a file of its own",
                        at(doc.root));
    }
  }
}

YAML::Node load_yaml(const std::string& text, const std::string& origin) {
  try {
    check_one_document(text, origin);
    return YAML::Load(text);
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
