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

std::optional<int> explain_unknown_option(const CLI::App& app, const CLI::ParseError& error) {
  // (CLI11 names an ExtrasError after the app that threw it: its exit code says what it is.)
  if (error.get_exit_code() != static_cast<int>(CLI::ExitCodes::ExtrasError)) return std::nullopt;
  // The subcommand given (the one whose options count) and what was left over.
  const auto parsed = app.get_subcommands();
  const CLI::App& sub = parsed.empty() ? app : *parsed.front();
  std::vector<std::string> names;
  for (const CLI::App* level : {&app, &sub}) {
    for (const auto* option : level->get_options()) {
      for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  const std::vector<std::string> extras = app.remaining(true);
  const std::string command =
      &sub == &app ? std::string("disttrain") : "disttrain " + sub.get_name();
  for (const auto& extra : extras) {
    if (!extra.starts_with("-")) continue;
    const std::string name = extra.substr(0, extra.find('='));
    log::plain(fmt::format("{}: unknown option '{}'{}; '{} --help' lists the options\n", command,
                           name, text::suggestion_suffix(name, names), command));
    return static_cast<int>(ExitCode::kBadInput);
  }
  return std::nullopt;
}

}  // namespace dt::cli
