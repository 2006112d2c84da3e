// disttrain compare RUN_A RUN_B: two run folders side by side (core/outputs/compare.hpp);
// exit 0 when their models and final metrics are equal within --tolerance, 1 when not.

#include "cli/commands.hpp"
#include "core/outputs/compare.hpp"
#include "core/outputs/run_output.hpp"
#include "base/error.hpp"

#include <cmath>

namespace dt::cli {
namespace {

struct CompareArgs {
  std::string a, b;
  bool json = false;
  double tolerance = 0;
};

int run_compare(const CompareArgs& args) {
  if (!std::isfinite(args.tolerance) || args.tolerance < 0) {
    fail<UsageError>("compare: --tolerance {}: give a number >= 0 (0, the default: exactly "
                     "equal; 1e-9: equal to about 9 digits)",
                     args.tolerance);
  }
  const auto c = output::compare_runs(args.a, args.b, args.tolerance);
  print(args.json ? output::json_text(output::comparison_json(c)) + "\n" : output::comparison_text(c));
  return c.equal ? 0 : static_cast<int>(ExitCode::kExpectNotMet);
}

// With --json, stdout carries exactly one JSON object, an error's too (as `run --json`).
int compare_command(const CompareArgs& args) {
  try {
    return run_compare(args);
  } catch (const Error& e) {
    if (args.json) {
      nlohmann::ordered_json j = {{"error", e.what()}, {"exit_code", static_cast<int>(e.exit_code())}};
      print(output::json_text(j) + "\n");
    }
    throw;
  }
}

}  // namespace

void add_compare(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare", "compare two run folders (configs, final metrics, parameters, loss curves, "
                 "timing); exit 0 when equal within --tolerance, 1 when not");
  cmd->add_option("run_a", args->a, "a run folder (the output.dir of `disttrain run`)")->required();
  cmd->add_option("run_b", args->b, "the run folder to compare it with")->required();
  cmd->add_flag("--json", args->json, "print one JSON object (docs/outputs.md) instead of the table");
  cmd->add_option("--tolerance", args->tolerance,
                  "values a and b are equal when |a - b| <= T * max(1, |a|, |b|); 0 (the "
                  "default): exactly equal")
      ->type_name("T");
  cmd->callback([&action, args] { action = [args] { return compare_command(*args); }; });
}

}  // namespace dt::cli
