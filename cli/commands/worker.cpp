// disttrain worker --connect ENDPOINT --rank R [--job ID] [--config FILE]: one worker process.
// The coordinator starts these itself for local runs (with --job); the same command joins a run
// from another host or from a launcher (`run --listen HOST:PORT --expect-workers N` there), and
// `--join` (without --rank) joins a running job of fault_tolerance.elastic (docs/elastic.md).

#include "cli/commands.hpp"
#include "core/config/config.hpp"
#include "core/protocol/keys.hpp"
#include "core/protocol/protocol.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/kill_points.hpp"
#include "base/log.hpp"
#include "base/net.hpp"
#include "base/random.hpp"
#include "transports/transport.hpp"

#include <unistd.h>

#include <csignal>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <thread>

namespace dt::cli {
namespace {

struct WorkerArgs {
  std::string connect;
  std::int64_t rank = -1;  // -1: not given (--join lets the coordinator choose)
  bool join = false;
  std::string job;
  std::string config_path;
  std::vector<std::string> sets;
  std::string key;         // --key FILE: this worker's PREFIX.key
  std::string server_key;  // --server-key FILE: the coordinator's PREFIX.pub
  int join_timeout_ms = 60000;
  std::string data;
  std::string advertise;  // --advertise HOST: what the other workers connect to
  int log_level = -1;
};

// tcp://HOST:PORT: the host must resolve here, or the wait for the coordinator would only time
// out without saying why. A name may not resolve yet (a Kubernetes pod's DNS record appears
// when the pod starts, and workers may start first): it is tried again until the join timeout,
// and the failure is printed at once. Returns this host's address on the route to it: the
// interface this worker's own listeners (peer links) bind, so that the other workers reach
// them the same way.
std::string check_resolves(const std::string& endpoint, int timeout_ms) {
  const std::string rest = endpoint.substr(6);
  const std::string port = net::port_of(rest);
  if (rest.rfind(':') == std::string::npos || rest.rfind(':') == 0 || port.empty() ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    fail<UsageError>("--connect {}: expected tcp://HOST:PORT", endpoint);
  }
  const std::string what = "--connect " + endpoint;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (bool first = true;; first = false) {
    try {
      return net::route_address(net::host_of(rest), port, what).value_or("127.0.0.1");
    } catch (const UsageError& e) {
      if (std::chrono::steady_clock::now() >= deadline) {
        fail<UsageError>("{} (tried for {} ms, --join-timeout-ms)", e.message(), timeout_ms);
      }
      if (first) log::warn("{}; trying again for {} ms", e.message(), timeout_ms);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

int run_joining_worker(const JoinOptions& join) {
  // A peer that dies leaves its shared-memory bell (a FIFO) without a reader: ringing it must
  // give EPIPE, which the link handles, not SIGPIPE, which would take this worker down too
  // (found when a killed ring member took its predecessor with it under `restart`).
  ::signal(SIGPIPE, SIG_IGN);
  const std::string name = join.rank == protocol::kAnyRank ? std::string("worker (joining)")
                                                            : fmt::format("worker {}", join.rank);
  log::set_prefix(name);
  kill_points::set_role(name);
  if (join.log_level >= 0) log::set_level(static_cast<log::Level>(join.log_level));
  transport::TransportOptions options;
  options.job_id = join.job_id;
  options.security = join.security;
  if (join.connect.starts_with("ipc://")) {
    options.kind = transport::TransportOptions::Kind::kIpc;
    // Listeners of this worker (peer links) go next to the coordinator's socket: its folder is
    // private to the run and removed by the coordinator, even when this worker is killed.
    options.ipc_dir = std::filesystem::path(join.connect.substr(6)).parent_path();
  } else if (join.connect.starts_with("tcp://")) {
    options.kind = transport::TransportOptions::Kind::kTcp;
    const std::string route = check_resolves(join.connect, join.join_timeout_ms);
    if (join.advertise.empty()) {
      options.tcp_address = route + ":0";
    } else {
      // Told the name the others reach it by, which may not be an address of this host (NAT):
      // every interface, advertised as that name.
      options.tcp_address = route.starts_with('[') ? "[::]:0" : "0.0.0.0:0";
      options.advertise = join.advertise;
    }
  } else {
    fail<UsageError>("--connect expects ipc://PATH or tcp://HOST:PORT, got '{}'", join.connect);
  }
  auto transport = transport::make_zmq_transport(options);
  roles::WorkerOptions worker{join.connect, join.rank, join.job_id, nullptr};
  worker.own_process = true;  // its signals are its own (a SIGTERM may be a planned leave)
  worker.join = join.join;
  if (join.job_id == 0) {
    // Joining by itself: an identity of its own, so that a second worker claiming the same
    // rank is refused by name instead of taking this one's connection over.
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    worker.identity = fmt::format("w{}-{:012x}", join.join ? "j" : std::to_string(join.rank),
                                  random::hash(static_cast<std::uint64_t>(now),
                                               static_cast<std::uint64_t>(::getpid()), 1, 0) &
                                      0xFFFFFFFFFFFFULL);
    worker.startup_timeout = std::chrono::milliseconds(join.join_timeout_ms);
  }
  worker.config_hash = join.config_hash;
  worker.curve = join.security.curve;
  if (join.security.curve) {
    log::info("CURVE: this worker's public key is {}", join.security.own.public_key);
  }
  worker.data = join.data;
  return roles::run_worker(*transport, worker);
}

namespace {

int work(const WorkerArgs& args) {
  JoinOptions join;
  join.connect = args.connect;
  if (args.rank < 0 && !args.join) {
    fail<UsageError>("worker: --rank is required (or --join, to join a running job with "
                     "fault_tolerance.elastic and take the rank the coordinator gives)");
  }
  if (args.join && !args.job.empty()) {
    fail<UsageError>("worker: --join and --job do not go together: a joiner learns the job");
  }
  join.join = args.join;
  join.rank = args.rank < 0 ? protocol::kAnyRank : static_cast<std::uint32_t>(args.rank);
  join.log_level = args.log_level;
  join.join_timeout_ms = args.join_timeout_ms;
  join.data = args.data;
  if (!args.advertise.empty()) {
    if (!net::valid_host(args.advertise) || net::is_wildcard(args.advertise)) {
      fail<UsageError>("--advertise {}: expected this host's name or address as the other "
                       "workers reach it, without a port (an IPv6 address in brackets)",
                       args.advertise);
    }
    join.advertise = args.advertise;
  }
  if (!args.job.empty()) {
    const auto* end = args.job.data() + args.job.size();
    if (std::from_chars(args.job.data(), end, join.job_id, 16).ptr != end || join.job_id == 0) {
      fail<UsageError>("--job expects the hexadecimal job id the coordinator printed, got '{}'",
                       args.job);
    }
  }
  bool curve_required = false;
  if (!args.config_path.empty()) {
    std::vector<config::Override> overrides;
    for (const auto& s : args.sets) overrides.push_back(config::parse_override(s));
    const auto config = config::load(args.config_path, overrides);
    join.config_hash = config::config_hash(config);
    curve_required = config.transport.security == config::SecurityMode::kCurve;
  } else if (!args.sets.empty()) {
    fail<UsageError>("--set needs --config: a worker without one takes the coordinator's config");
  }
  join.security = roles::worker_keys(args.key, args.server_key, curve_required);
  if (!join.advertise.empty() && !join.security.curve) {
    // Its peer links would listen on every interface, open to anyone on the network.
    fail<UsageError>("--advertise makes this worker listen on every interface, which needs "
                     "transport.security curve: give --key and --server-key (see docs/security.md)");
  }
  return run_joining_worker(join);
}

}  // namespace

void add_worker(CLI::App& app, Action& action, const Globals&) {
  auto args = std::make_shared<WorkerArgs>();
  auto* cmd = app.add_subcommand(
      "worker", "run one worker of a run: join a coordinator started with `run --listen`");
  cmd->add_option("--connect", args->connect,
                  "the coordinator's endpoint, as `run` printed it: tcp://HOST:PORT")
      ->required();
  cmd->add_option("--rank", args->rank, "this worker's rank (with --join: the slot it asks for)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--join", args->join,
                "join a running job (fault_tolerance.elastic): admitted at the next step, it "
                "takes the lowest free rank below max_workers; see docs/elastic.md");
  cmd->add_option("--job", args->job,
                  "the run's job id (hexadecimal; given by `run` to the workers it starts)");
  cmd->add_option("--config", args->config_path,
                  "the config this worker expects; the coordinator refuses it when its own "
                  "differs (the worker trains with the coordinator's)");
  cmd->add_option("--set", args->sets, "with --config: the overrides the coordinator was given")
      ->type_name("KEY=VALUE");
  cmd->add_option("--key", args->key,
                  "transport.security curve: this worker's key pair, PREFIX.key of `disttrain "
                  "keygen` (else $DISTTRAIN_SECRET_KEY); keys are never given on the command line")
      ->type_name("FILE");
  cmd->add_option("--server-key", args->server_key,
                  "transport.security curve: the coordinator's public key file, its PREFIX.pub "
                  "(else $DISTTRAIN_SERVER_KEY)")
      ->type_name("FILE");
  cmd->add_option("--data", args->data,
                  "this worker's own copy of the run's CSV (same columns and rows), instead of "
                  "the coordinator's path")
      ->type_name("FILE");
  cmd->add_option("--advertise", args->advertise,
                  "the host name or address the other workers reach this one at (ring and "
                  "tensor peer links), when not its address on the route to the coordinator; "
                  "they then listen on every interface, so it needs --key")
      ->type_name("HOST");
  cmd->add_option("--join-timeout-ms", args->join_timeout_ms,
                  "how long to wait for the coordinator to answer")
      ->check(CLI::Range(1000, 86400000));
  cmd->add_option("--log-level", args->log_level, "0 quiet .. 4 debug");
  cmd->callback([&action, args] { action = [args] { return work(*args); }; });
}

}  // namespace dt::cli
