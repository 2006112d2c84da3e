// disttrain run config.yaml: trains and writes the run folder.

#include "cli/commands.hpp"
#include "core/config/config.hpp"
#include "core/coordinator/coordinator.hpp"
#include "core/coordinator/progress.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/keys.hpp"
#include "core/coordinator/resume.hpp"
#include "core/outputs/initial_model.hpp"
#include "core/outputs/run_output.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/resources.hpp"
#include "base/kill_points.hpp"
#include "base/log.hpp"
#include "base/net.hpp"
#include "base/signals.hpp"
#include "core/coordinator/rendezvous.hpp"
#include "base/text.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>
#include <utility>

namespace dt::cli {
namespace {

struct RunArgs {
  std::string config_path;
  std::vector<std::string> sets;
  std::vector<std::string> faults;
  bool json = false;
  bool resume = false;      // --resume given
  std::string resume_dir;   // --resume DIR: the run folder to continue (else output.dir)
  std::string listen;       // --listen HOST:PORT: tcp, where workers that join connect
  int expect_workers = -1;  // --expect-workers N: transport.remote_workers
  std::string advertise;    // --advertise HOST: transport.advertise
  bool timeline = false;    // --timeline: output.timeline (its default window unless set)
};

// Under a launcher (rendezvous.hpp) every rank runs this same command line. The overrides
// that make rank 0 the coordinator of ranks 1..N-1, which the workers apply too so that their
// config hash is the coordinator's. shards.count, when the config does not set it, is taken from
// the launcher; when it does, the worker count must match.
std::vector<config::Override> launcher_overrides(const rendezvous::Launch& launch,
                                                 const std::filesystem::path& config_path,
                                                 const std::vector<config::Override>& given) {
  std::string host = net::host_of(launch.address);
  const std::string port = net::port_of(launch.address);
  std::vector<config::Override> out = given;
  out.push_back({"transport.type", "tcp"});
  if (net::is_loopback(host)) {
    // One host: loopback by number (the config's loopback check reads numbers).
    out.push_back({"transport.address", (host == "localhost" ? "127.0.0.1" : host) + ":" + port});
  } else {
    // Rank 0 listens on every interface and tells the others MASTER_ADDR, the name they
    // connect by. Binding MASTER_ADDR itself is the classic trap: on Debian a host's own name
    // resolves to 127.0.1.1 in /etc/hosts, which no other host reaches.
    if (config::load(config_path, given).transport.security != config::SecurityMode::kCurve) {
      fail<ConfigError>("{}: the launcher's coordinator address {} ({}) is not loopback, and "
                        "listening where other machines can connect needs authentication: set "
                        "transport.security: curve with one key pair for the job (`disttrain "
                        "keygen job`; transport.keys: {{secret: job.key, authorized: job.pub, "
                        "server: job.pub}}; see docs/security.md), or MASTER_ADDR=127.0.0.1 on one "
                        "host",
                        config_path.string(), host, launch.source);
    }
    out.push_back({"transport.address", (host.starts_with('[') ? "[::]:" : "0.0.0.0:") + port});
    bool advertise_given = false;
    for (const auto& o : given) advertise_given = advertise_given || o.key_path == "transport.advertise";
    if (!advertise_given) out.push_back({"transport.advertise", host});
  }
  const auto probe = config::load(config_path, out);
  out.push_back({"transport.remote_workers", std::to_string(launch.size - 1)});
  const int workers = config::worker_count(probe);
  if (workers == launch.size - 1) return out;
  bool count_given = false;
  for (const auto& o : given) count_given = count_given || o.key_path == "shards.count";
  if (!count_given) {
    const YAML::Node file = YAML::LoadFile(config_path.string());
    count_given = file["shards"] && file["shards"]["count"];
  }
  const int tensor = probe.parallelism.tensor;
  if (count_given || (launch.size - 1) % tensor != 0) {
    fail<ConfigError>("{}: the launcher started {} processes ({}): rank 0 coordinates and the "
                      "other {} are the workers, but the config has {} workers (shards.count x "
                      "parallelism.tensor); start {} processes or change shards.count",
                      config_path.string(), launch.size, launch.source, launch.size - 1, workers,
                      workers + 1);
  }
  out.insert(out.end() - 1, {"shards.count", std::to_string((launch.size - 1) / tensor)});
  return out;
}

// A word as the shell reads it back.
std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=.,:/@%") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command that continues this run from its checkpoint: the same config and --set
// overrides (not the --fault ones: a fault injected to test a failure is not wanted again).
std::string resume_command(const RunArgs& args) {
  std::string cmd = "disttrain run";
  if (!args.config_path.empty()) cmd += " " + shell_word(args.config_path);
  for (const auto& s : args.sets) cmd += " --set " + shell_word(s);
  cmd += " --resume";
  if (!args.resume_dir.empty()) cmd += " " + shell_word(args.resume_dir);
  return cmd;
}

std::string human_line(const config::Config& config, const roles::RunResult& r,
                       const std::vector<std::string>& failures) {
  std::string metrics;
  if (r.final) {
    metrics = fmt::format("final loss {:.6g}", r.final->loss);
    if (r.final->accuracy) metrics += fmt::format(", accuracy {:.4f}", *r.final->accuracy);
    if (r.final->auc) metrics += fmt::format(", auc {:.4f}", *r.final->auc);
    if (r.validation) metrics += fmt::format(", validation loss {:.6g}", r.validation->loss);
  }
  return fmt::format("{}: {} {} on {} workers ({}), {} steps in {:.2f} s, {}; {}{}\n", config.name,
                     r.status == "ok" ? "trained" : r.status, config::name_of(config.model.type),
                     config::worker_count(config), config::describe_aggregation(config), r.steps,
                     r.wall_seconds, metrics, config.output.dir.string(),
                     failures.empty() ? "" : fmt::format(" (expect not met: {})", fmt::join(failures, "; ")));
}

int train(RunArgs args, const Globals& globals, bool& printed) {
  // `run --resume configs/x.yaml`: the file is the config, the folder its output.dir.
  if (args.config_path.empty() && std::filesystem::is_regular_file(args.resume_dir)) {
    args.config_path = std::exchange(args.resume_dir, "");
  }
  const std::int64_t started_ms = roles::steady_ms();  // summary.json's wall_seconds
  signals::install_interrupt_handlers();
  log::set_prefix("coordinator");
  kill_points::set_role("coordinator");
  std::vector<config::Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(config::parse_override(s));
  for (const auto& f : args.faults) overrides.push_back(config::parse_fault_override(f));
  // Explicit flags first; else the launcher's environment decides this process's role.
  if (!args.listen.empty()) {
    overrides.push_back({"transport.type", "tcp"});
    overrides.push_back({"transport.address", args.listen});
  }
  if (!args.advertise.empty()) overrides.push_back({"transport.advertise", args.advertise});
  if (args.expect_workers >= 0) {
    if (args.listen.empty()) {
      fail<UsageError>("--expect-workers needs --listen HOST:PORT: the address the workers "
                       "connect to");
    }
    overrides.push_back({"transport.remote_workers", std::to_string(args.expect_workers)});
  } else if (args.listen.empty() && args.resume_dir.empty() && !args.config_path.empty()) {
    if (const auto launch = rendezvous::from_environment()) {
      overrides = launcher_overrides(*launch, args.config_path, overrides);
      if (launch->rank > 0) {
        // A worker of the launched job: it trains with the coordinator's config (this one's
        // hash must match) and writes nothing of its own.
        const auto config = config::load(args.config_path, overrides);
        log::set_prefix(fmt::format("worker {}", launch->rank - 1));
        kill_points::set_role(fmt::format("worker {}", launch->rank - 1));
        log::info("{} rank {} of {}: worker {} of the coordinator at {}", launch->source,
                  launch->rank, launch->size, launch->rank - 1, launch->address);
        cli::JoinOptions join;
        join.connect = "tcp://" + launch->address;
        join.rank = static_cast<std::uint32_t>(launch->rank - 1);
        join.config_hash = config::config_hash(config);
        join.join_timeout_ms = config.transport.join_timeout_ms;
        join.log_level = globals.log_level();
        if (config.transport.security == config::SecurityMode::kCurve) {
          join.security = roles::worker_keys(config.transport.secret_key,
                                             config.transport.server_key, true);
        }
        printed = true;  // a worker prints no summary
        return run_joining_worker(join);
      }
      log::info("{} rank 0 of {}: the coordinator, on {}", launch->source, launch->size,
                launch->address);
    }
  }
  std::filesystem::path config_path = args.config_path;
  if (!args.resume_dir.empty()) {
    // --resume DIR continues that run folder; without a config, with the config it ran with.
    if (config_path.empty()) config_path = std::filesystem::path(args.resume_dir) / "config.resolved.yaml";
    overrides.insert(overrides.begin(), config::Override{"output.dir", args.resume_dir});
  }
  if (config_path.empty()) {
    fail<UsageError>("run: give the config file (disttrain run config.yaml), or the run folder "
                     "to resume (disttrain run --resume runs/x)");
  }
  if (args.resume && !args.resume_dir.empty() && !std::filesystem::is_directory(args.resume_dir)) {
    fail<UsageError>("--resume {}: no such run folder; give the output.dir of the run to "
                     "continue, or --resume alone for the config's own output.dir",
                     args.resume_dir);
  }
  auto config = config::load(config_path, overrides);
  if (args.timeline && config.output.timeline_steps == 0) {
    config.output.timeline_steps = config::kTimelineDefaultSteps;
  }
  // The live line on a terminal, plain lines in a log, nothing under -q or -v (progress.hpp).
  roles::progress::set_form(roles::progress::choose_form(globals.log_level()));
  roles::progress::phase(config.data.synthetic ? std::string("generating the synthetic rows")
                         : config.data.path.empty() ? std::string("reading the data")
                         : config.data.path == "-"  ? std::string("reading standard input")
                                                    : "reading " + config.data.path.string());
  // data.path '-' (stdin) or a compressed file: spooled or decompressed into a private folder
  // that lives as long as the run (a lost worker's replacement reads its rows again). The
  // resolved config keeps the path as given.
  std::optional<files::TempDir> spool;
  const auto given_path = config.data.path;
  auto shown_data = config.data;  // the resolved config shows the files as given
  // A decompressed CSV is indexed while it is written (not with data.categorical: its one_hot
  // values are gathered by the index pass over the file).
  data::CsvIndex indexed;
  indexed.delimiter = config.data.delimiter;
  if (!config.data.synthetic && !config.data.path.empty()) {
    config.data.path = readable_data(config.data.path, config.data.compression, spool, "data.path",
                                     config.data.categorical.empty() ? &indexed : nullptr);
    shown_data.format = resolve_format(config.data, given_path == "-", spool, "data.path");
  }
  const bool use_index = !indexed.path.empty() && indexed.path == config.data.path &&
                         config.data.format == config::DataFormat::kCsv;
  if (use_index) log::info("indexed {} while it was decompressed", given_path.string());
  // Everything that can be checked before a process starts is: bad data exits 2 and leaves
  // no run folder behind, and neither does a checkpoint that does not fit.
  // Two threads for the CSV index: no worker has started yet, so the cores are free.
  const auto plan = roles::make_plan(config, 2, use_index ? &indexed : nullptr);
  std::optional<roles::InitialModel> init;
  if (!config.model.init.empty()) init = output::read_initial_model(config, plan.source);
  const auto keys = roles::run_keys(config);
  roles::Checkpointer checkpointer(config, plan, config.output.dir);
  roles::RunResult result;
  if (args.resume) {
    auto point = roles::find_resume_point(config.output.dir, config, plan);
    for (const auto& w : point.warnings) {
      log::warn("{}", w);
      result.warnings.push_back(w);
    }
    result.checkpoint["resumed_from"] = point.path.string();
    result.checkpoint["resumed_from_step"] = point.checkpoint.step();
    checkpointer.set_resume(std::move(point));
  }
  result.checkpoint["every_steps"] = config.fault_tolerance.checkpoint_every_steps;
  const auto dir = output::prepare_run_dir(config, args.resume);
  if (spool) {
    auto shown = config;
    shown.data = shown_data;
    output::write_resolved_config(dir, shown);
  } else {
    output::write_resolved_config(dir, config);
  }

  const auto note_checkpoint = [&] {
    if (checkpointer.any_written()) result.checkpoint["last_step"] = checkpointer.last_written();
  };
  try {
    try {
      result = roles::run_coordinator(
          config, plan,
          {dir / "workers", globals.log_level(), &checkpointer, &keys, init ? &*init : nullptr,
           started_ms},
          &result);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      // Memory or a thread that ran out mid-run fails the run like any error (exit 3), and
      // summary.json says so.
      const std::string exhausted = resources::describe_exhaustion(e);
      result.status = "failed";
      result.error = exhausted.empty() ? fmt::format("internal error: {}", e.what()) : exhausted;
      throw TrainingError(result.error);
    }
    note_checkpoint();
  } catch (const Error& e) {
    roles::progress::clear();
    note_checkpoint();
    result.max_rss_bytes = resources::peak_rss_bytes();
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
    const auto saved = checkpoint::list(roles::checkpoint_dir(dir));
    if (!saved.empty() && (e.exit_code() == ExitCode::kInterrupted ||
                           e.exit_code() == ExitCode::kTrainingFailed)) {
      log::error("checkpoint {} kept; resume with: {}", saved.back().string(),
                 resume_command(args));
    }
    throw;
  }
  const auto failures = output::check_expectations(config, result);
  result.max_rss_bytes = resources::peak_rss_bytes();  // once: summary.json and --json agree
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
  cmd->add_option("config", args->config_path,
                  "the run's YAML config (optional with --resume DIR: DIR/config.resolved.yaml)");
  cmd->add_option("--set", args->sets, "override a config key: --set training.optimizer.lr=0.1")
      ->type_name("KEY=VALUE");
  cmd->add_option("--fault", args->faults,
                  "testing: inject a fault, e.g. --fault rank=2,at_step=40,action=kill "
                  "(appends to the config's faults list)")
      ->type_name("SPEC");
  cmd->add_flag("--json", args->json, "print exactly one JSON object (the summary) on stdout");
  cmd->add_flag("--timeline", args->timeline,
                "write timeline.json (Chrome trace of every step's phases; output.timeline)");
  auto* resume = cmd->add_option("--resume", args->resume_dir,
                                 "continue from the latest checkpoint of the config's output.dir, "
                                 "or of the run folder DIR")
                     ->expected(0, 1)
                     ->type_name("[DIR]");
  cmd->add_option("--listen", args->listen,
                  "listen on tcp HOST:PORT for workers that join (`disttrain worker --connect`); "
                  "sets transport.type tcp and transport.address")
      ->type_name("HOST:PORT");
  cmd->add_option("--advertise", args->advertise,
                  "the host name or address other hosts connect to, when not the one listened "
                  "on (--listen 0.0.0.0:PORT, NAT); sets transport.advertise")
      ->type_name("HOST");
  cmd->add_option("--expect-workers", args->expect_workers,
                  "with --listen: this many workers (the last ranks) join by themselves "
                  "(transport.remote_workers)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([&action, &globals, args, resume] {
    args->resume = resume->count() > 0;
    action = [args, &globals] { return run(*args, globals); };
  });
}

}  // namespace dt::cli
