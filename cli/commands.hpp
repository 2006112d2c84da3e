#pragma once
// Each subcommand lives in cli/commands/<name>.cpp and registers itself on the CLI11 app:
// it adds its options and returns, through `action`, what to run when it is chosen.
// Commands parse arguments and print; the work is in core/.

#include <CLI/CLI.hpp>

#include <functional>

namespace dt::cli {

using Action = std::function<int()>;

struct Globals {
  int verbose = 0;
  int quiet = 0;
  [[nodiscard]] int log_level() const;  // dt::log::Level as int
};

void add_run(CLI::App& app, Action& action, const Globals& globals);
void add_validate(CLI::App& app, Action& action, const Globals& globals);
void add_predict(CLI::App& app, Action& action, const Globals& globals);
void add_eval(CLI::App& app, Action& action, const Globals& globals);
void add_worker(CLI::App& app, Action& action, const Globals& globals);
void add_gen(CLI::App& app, Action& action, const Globals& globals);
void add_reference(CLI::App& app, Action& action, const Globals& globals);

// Writes text to stdout in full (a closed pipe is not an error worth a stack of messages).
void print(std::string_view text);

}  // namespace dt::cli
