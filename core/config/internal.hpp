#pragma once
// The steps of config::parse, internal to core/config.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <vector>

#include "core/config/config.hpp"
#include "core/config/reader.hpp"

namespace dt::config::detail {

// Writes each override into `root` (a map), creating missing maps, and records it in `reader`
// so that errors about its value name the override. Unknown keys fail like in the file.
void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides, Reader& reader);

// The validated Config from the top-level map; relative paths resolve against `base_dir`.
[[nodiscard]] Config build(const Section& root, const std::filesystem::path& base_dir);

}  // namespace dt::config::detail
