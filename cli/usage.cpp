// check_subcommand (commands.hpp): what CLI11 says of a missing or unknown subcommand ("A
// subcommand is required", "The following arguments were not expected") names neither the
// subcommands nor the one meant; this says both, before CLI11 parses.

#include "cli/commands.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::cli {
namespace {

// main's own flags, which may come before the subcommand: -v, -q (repeated: -vv), --verbose,
// --quiet. Anything else that starts with '-' is CLI11's to judge (--help, --version, a typo).
bool is_global_flag(std::string_view arg) {
  if (arg == "--verbose" || arg == "--quiet") return true;
  return arg.size() > 1 && arg[0] == '-' && arg[1] != '-' &&
         arg.find_first_not_of("vq", 1) == std::string_view::npos;
}

std::string subcommand_list(const CLI::App& app) {
  std::string out = "The subcommands:\n";
  for (const auto* sub : app.get_subcommands({})) {
    out += fmt::format("  {:<11} {}\n", sub->get_name(), sub->get_description());
  }
  return out + "Run 'disttrain SUBCOMMAND --help' for its arguments.\n";
}

}  // namespace

std::optional<int> check_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (is_global_flag(arg)) continue;
    if (arg.starts_with('-')) return std::nullopt;
    if (std::find(names.begin(), names.end(), arg) != names.end()) return std::nullopt;
    log::plain(fmt::format("disttrain: unknown subcommand '{}'{}\n{}", arg,
                           text::suggestion_suffix(arg, names), subcommand_list(app)));
    return static_cast<int>(ExitCode::kBadInput);
  }
  log::plain(fmt::format("{}\ndisttrain: give a subcommand (disttrain run config.yaml to train)\n",
                         app.help()));
  return static_cast<int>(ExitCode::kBadInput);
}

}  // namespace dt::cli
