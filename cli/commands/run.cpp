// disttrain run config.yaml: trains and writes the run folder.

#include "cli/commands.hpp"
#include "core/config/config.hpp"
#include "core/roles/coordinator.hpp"
#include "core/run_output.hpp"
#include "core/util/error.hpp"
#include "core/util/log.hpp"
#include "core/util/signals.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

namespace dt::cli {
namespace {

struct RunArgs {
  std::string config_path;
  std::vector<std::string> sets;
  std::vector<std::string> faults;
  bool json = false;
};

std::string human_line(const config::Config& config, const roles::RunResult& r,
                       const std::vector<std::string>& failures) {
  std::string metrics;
  if (r.final) {
    metrics = fmt::format("final loss {:.6g}", r.final->loss);
    if (r.final->accuracy) metrics += fmt::format(", accuracy {:.4f}", *r.final->accuracy);
    if (r.validation) metrics += fmt::format(", validation loss {:.6g}", r.validation->loss);
  }
  return fmt::format("{}: {} {} on {} workers ({}), {} steps in {:.2f} s, {}; {}{}\n", config.name,
                     r.status == "ok" ? "trained" : r.status, config::name_of(config.model.type),
                     config::worker_count(config), config::describe_aggregation(config), r.steps,
                     r.wall_seconds, metrics, config.output.dir.string(),
                     failures.empty() ? "" : fmt::format(" (expect not met: {})", fmt::join(failures, "; ")));
}

int train(const RunArgs& args, const Globals& globals, bool& printed) {
  signals::install_interrupt_handlers();
  log::set_prefix("coordinator");
  std::vector<config::Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(config::parse_override(s));
  for (const auto& f : args.faults) overrides.push_back(config::parse_fault_override(f));
  const auto config = config::load(args.config_path, overrides);
  // Everything that can be checked before a process starts is: bad data exits 2 and leaves
  // no run folder behind.
  const auto plan = roles::make_plan(config);
  const auto dir = output::prepare_run_dir(config);
  output::write_resolved_config(dir, config);

  roles::RunResult result;
  try {
    result = roles::run_coordinator(config, plan, {dir / "workers", globals.log_level()}, &result);
  } catch (const Error& e) {
    try {
      output::write_results(dir, config, result, {});
    } catch (const Error& write_error) {
      log::error("{}", write_error.what());
    }
    if (args.json) {
      nlohmann::ordered_json j = output::summary_json(config, result, {});
      j["exit_code"] = static_cast<int>(e.exit_code());
      print(output::json_text(j) + "\n");
      printed = true;
    }
    if (e.exit_code() == ExitCode::kInterrupted) {
      log::error("interrupted; workers stopped. Outputs so far are in {}", dir.string());
    }
    throw;
  }
  const auto failures = output::check_expectations(config, result);
  output::write_results(dir, config, result, failures);
  for (const auto& f : failures) log::error("expect not met: {}", f);
  if (args.json) {
    print(output::json_text(output::summary_json(config, result, failures)) + "\n");
  } else {
    print(human_line(config, result, failures));
  }
  return failures.empty() ? 0 : static_cast<int>(ExitCode::kExpectNotMet);
}

// With --json, stdout carries exactly one JSON object whatever happens, even when the run
// fails before it starts (bad config: exit 2).
int run(const RunArgs& args, const Globals& globals) {
  bool printed = false;
  try {
    return train(args, globals, printed);
  } catch (const Error& e) {
    if (args.json && !printed) {
      nlohmann::ordered_json j;
      j["status"] = e.exit_code() == ExitCode::kInterrupted ? "interrupted" : "failed";
      j["error"] = e.what();
      j["exit_code"] = static_cast<int>(e.exit_code());
      print(output::json_text(j) + "\n");
    }
    throw;
  }
}

}  // namespace

void add_run(CLI::App& app, Action& action, const Globals& globals) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "train as the config says; writes the run folder");
  cmd->add_option("config", args->config_path, "the run's YAML config")->required();
  cmd->add_option("--set", args->sets, "override a config key: --set training.optimizer.lr=0.1")
      ->type_name("KEY=VALUE");
  cmd->add_option("--fault", args->faults,
                  "testing: inject a fault, e.g. --fault rank=2,at_step=40,action=kill "
                  "(appends to the config's faults list)")
      ->type_name("SPEC");
  cmd->add_flag("--json", args->json, "print exactly one JSON object (the summary) on stdout");
  cmd->callback([&action, &globals, args] { action = [args, &globals] { return run(*args, globals); }; });
}

}  // namespace dt::cli
