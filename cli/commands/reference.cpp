// disttrain reference: the config reference (docs/config.md is exactly this output).

#include "cli/commands.hpp"
#include "core/config/config.hpp"

namespace dt::cli {

void add_reference(CLI::App& app, Action& action, const Globals&) {
  auto* cmd = app.add_subcommand("reference", "print the config reference (Markdown)");
  cmd->callback([&action] {
    action = [] {
      print(config::reference_markdown());
      return 0;
    };
  });
}

}  // namespace dt::cli
