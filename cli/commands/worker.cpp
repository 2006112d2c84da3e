// disttrain worker --connect ENDPOINT --rank R --job ID: one worker process. The coordinator
// starts these itself for local runs; the same command joins a run from elsewhere.

#include "cli/commands.hpp"
#include "core/roles/worker.hpp"
#include "core/util/error.hpp"
#include "core/util/log.hpp"
#include "transports/transport.hpp"

#include <charconv>
#include <filesystem>

namespace dt::cli {
namespace {

struct WorkerArgs {
  std::string connect;
  std::uint32_t rank = 0;
  std::string job;
  int log_level = -1;
};

int work(const WorkerArgs& args) {
  log::set_prefix(fmt::format("worker {}", args.rank));
  if (args.log_level >= 0) log::set_level(static_cast<log::Level>(args.log_level));
  std::uint64_t job = 0;
  const auto* end = args.job.data() + args.job.size();
  if (args.job.empty() || std::from_chars(args.job.data(), end, job, 16).ptr != end) {
    fail<UsageError>("--job expects the hexadecimal job id the coordinator printed, got '{}'",
                     args.job);
  }
  transport::TransportOptions options;
  options.job_id = job;
  if (args.connect.starts_with("ipc://")) {
    options.kind = transport::TransportOptions::Kind::kIpc;
    // Listeners of this worker (peer links) go next to the coordinator's socket: its folder is
    // private to the run and removed by the coordinator, even when this worker is killed.
    options.ipc_dir = std::filesystem::path(args.connect.substr(6)).parent_path();
  }
  else if (args.connect.starts_with("tcp://")) options.kind = transport::TransportOptions::Kind::kTcp;
  else fail<UsageError>("--connect expects ipc://PATH or tcp://HOST:PORT, got '{}'", args.connect);
  auto transport = transport::make_zmq_transport(options);
  return roles::run_worker(*transport, {args.connect, args.rank, job, nullptr});
}

}  // namespace

void add_worker(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<WorkerArgs>();
  auto* cmd = app.add_subcommand("worker", "run one worker of a run (started by `run` itself)");
  cmd->add_option("--connect", args->connect, "the coordinator's endpoint")->required();
  cmd->add_option("--rank", args->rank, "this worker's rank")->required();
  cmd->add_option("--job", args->job, "the run's job id (hexadecimal)")->required();
  cmd->add_option("--log-level", args->log_level, "0 quiet .. 4 debug");
  cmd->callback([&action, args] { action = [args] { return work(*args); }; });
}

}  // namespace dt::cli
