#include <fmt/format.h>

#include "core/config/config.hpp"
#include "core/config/schema.hpp"

namespace dt::config {
namespace {

std::string_view section_of(std::string_view path) {
  const auto dot = path.find('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

}  // namespace

std::string reference_markdown() {
  std::string out =
      "# Configuration reference\n"
      "\n"
      "<!-- Generated from core/config/schema.cpp by `disttrain reference`; do not edit. -->\n"
      "\n"
      "Schema version 1. `data.path` is relative to the folder of the config file; `output.dir`\n"
      "to the directory disttrain runs in. Unknown keys are errors. Any key can be overridden\n"
      "from the shell with `--set key.path=value`, where the value is YAML:\n"
      "`--set training.optimizer.lr=0.1`, `--set model.hidden=[32,16]`.\n";
  for (const schema::SectionDoc& section : schema::sections()) {
    out += section.name.empty() ? "\n## Top level\n" : fmt::format("\n## `{}`\n", section.name);
    out += fmt::format("\n{}\n\n", section.description);
    out += "| key | type | default | meaning |\n";
    out += "| --- | --- | --- | --- |\n";
    for (const schema::Key& key : schema::keys()) {
      if (section_of(key.path) != section.name) continue;
      const std::string default_text =
          key.default_yaml.empty() ? key.default_note : fmt::format("`{}`", key.default_yaml);
      out +=
          fmt::format("| `{}` | {} | {} | {} |\n", key.path, key.type, default_text, key.meaning);
    }
  }
  return out;
}

}  // namespace dt::config
