// The coordinator's phases: plan, start workers, set them up, merge their statistics, train
// with the configured mode, evaluate, stop. Every wait is supervised (worker exits, heartbeats,
// Ctrl-C) and bounded.

#include "core/coordinator/timeline_recording.hpp"
#include "core/coordinator/coordinator.hpp"
#include "core/coordinator/session.hpp"
#include "core/coordinator/hellos.hpp"

#include "core/modes/mode.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/keys.hpp"
#include "core/coordinator/resume.hpp"
#include "core/coordinator/resume_membership.hpp"
#include "core/coordinator/statistics.hpp"
#include "core/coordinator/tensor_plan.hpp"
#include "core/coordinator/warm_start.hpp"
#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/memory.hpp"
#include "base/net.hpp"
#include "base/random.hpp"
#include "base/resources.hpp"
#include "base/signals.hpp"
#include "transports/transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

namespace dt::roles {

using transport::deadline_in;

namespace {

constexpr std::chrono::milliseconds kConnectTimeout{30000};
constexpr std::chrono::milliseconds kExitTimeout{5000};

std::uint64_t new_job_id() {
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return random::hash(static_cast<std::uint64_t>(now), static_cast<std::uint64_t>(::getpid()), 0, 0);
}

// The host other processes are told to connect to: transport.advertise, else the bound one;
// a listener on every interface (0.0.0.0) advertises this host's address on its default route.
std::string advertised_host(const config::TransportConfig& transport) {
  if (transport.type != config::TransportType::kTcp || !transport.advertise.empty()) {
    return transport.advertise;
  }
  const std::string host = net::host_of(transport.address);
  if (!net::is_wildcard(host)) return {};
  const auto found = net::default_route_address(host.starts_with('['));
  if (!found) {
    fail<ConfigError>("transport.address {} listens on every interface, and this host has no "
                      "default route to tell the other hosts its address by; set "
                      "transport.advertise (`run --advertise HOST`) to the name or address they "
                      "reach this host at",
                      transport.address);
  }
  return *found;
}

transport::TransportOptions transport_options(const config::Config& config, std::uint64_t job,
                                              const RunKeys& keys) {
  transport::TransportOptions o;
  switch (config.transport.type) {
    case config::TransportType::kInproc: o.kind = transport::TransportOptions::Kind::kInproc; break;
    case config::TransportType::kIpc: o.kind = transport::TransportOptions::Kind::kIpc; break;
    case config::TransportType::kTcp: o.kind = transport::TransportOptions::Kind::kTcp; break;
  }
  o.tcp_address = config.transport.address;
  o.advertise = advertised_host(config.transport);
  o.job_id = job;
  o.max_payload = config.transport.max_message_bytes;
  o.security = keys.coordinator;
  return o;
}

// Whole parameter vectors cross the network in one message: a limit below that would drop
// every one of them, which is better said now than found out by a timeout.
void check_message_size(const config::Config& config, std::size_t parameters) {
  constexpr std::uint64_t kSlack = 65536;  // the other fields of the message
  const std::uint64_t needed = static_cast<std::uint64_t>(parameters) * sizeof(double) + kSlack;
  if (config.transport.max_message_bytes < needed) {
    fail<ConfigError>("transport.max_message_bytes is {}, but this model's {} parameters need "
                      "messages of {} bytes; raise it to at least {}",
                      config.transport.max_message_bytes, parameters, needed, needed);
  }
}

}  // namespace

RunResult run_coordinator(const config::Config& config, const Plan& planned,
                          const CoordinatorOptions& options, RunResult* partial) {
  const Plan plan = with_join_slots(config, planned);  // elastic: slots for joiners
  RunResult local;
  RunResult& result = partial != nullptr ? *partial : local;
  const auto wall_start = options.started_ms >= 0 ? options.started_ms : steady_ms();
  result.source = plan.source;
  result.train_rows = plan.train_rows;
  result.validation_rows = plan.validation_rows.size();
  result.warnings.insert(result.warnings.end(), plan.warnings.begin(), plan.warnings.end());
  const int ranks = plan.starting_ranks();  // the workers it starts with
  const auto task = config::task_of(config.model);
  const auto kind = data::label_kind(task);

  // ZeroMQ aborts the process when accept(2) finds no file descriptor left (ipc), so the budget
  // is checked first: about twice the peaks measured (20 + 7 per worker, and 8 + 3 per worker
  // for each parameter server).
  const auto servers = static_cast<std::uint64_t>(config.aggregation.servers);
  resources::require_fds(32 + plan.shard_rows.size() * (8 + 4 * servers) + 8 * servers,
                         fmt::format("a run of {} workers", plan.shard_rows.size()));
  const std::uint64_t job = new_job_id();
  const RunKeys keys = options.keys != nullptr ? *options.keys : run_keys(config);
  auto transport = transport::make_zmq_transport(transport_options(config, job, keys));
  auto listener = transport->listen("coord");
  HeartbeatServer heartbeat(*transport, job, static_cast<int>(plan.shard_rows.size()));
  log::info("listening on {} (heartbeats on {})", listener->endpoint(), heartbeat.endpoint());
  if (const auto& bound = config.transport.address;
      config.transport.type == config::TransportType::kTcp &&
      (!config.transport.advertise.empty() || net::is_wildcard(net::host_of(bound)))) {
    log::notice("bound to {}:{}; other processes are told {} ({})", net::host_of(bound),
                net::port_of(listener->endpoint()), listener->endpoint(),
                config.transport.advertise.empty()
                    ? "this host's address on its default route; --advertise HOST to choose"
                    : "transport.advertise");
  }
  if (keys.coordinator.curve) {
    log::info("transport.security curve: every link encrypted; the coordinator's public key is "
              "{}, {} client key{} admitted",
              keys.coordinator.own.public_key, keys.coordinator.authorized.size(),
              keys.coordinator.authorized.size() == 1 ? "" : "s");
  }

  std::unique_ptr<WorkerPool> pool;
  if (config.transport.type == config::TransportType::kInproc) {
    pool = make_thread_pool(*transport, job);
  } else {
    // Keys inherited from this process's environment are not the workers' own: only the run's.
    std::vector<std::string> environment = {kSecretKeyEnv, kServerKeyEnv, kAuthorizedKeysEnv};
    environment.insert(environment.end(), keys.child_environment.begin(),
                       keys.child_environment.end());
    pool = make_process_pool(
        {self_executable(), options.worker_log_dir, job, options.log_level, environment});
  }
  // The last remote_workers ranks are started by someone else and join by themselves.
  const int first_remote = ranks - config.transport.remote_workers;
  // Joiners (elastic) join by themselves too, in slots above the starting ranks or a leaver's.
  if (first_remote < ranks || config.fault_tolerance.elastic) {
    pool = with_remote_ranks(std::move(pool), first_remote, ranks);
  }
  // The endpoints as resolved (a port 0 picked), so that a wrong interface shows at once.
  // With curve a worker needs its key and this coordinator's public key (keygen's pair).
  std::string key_flags;
  if (keys.coordinator.curve) {
    auto pub = config.transport.secret_key;
    pub = pub.empty() ? std::filesystem::path("COORDINATOR.pub") : pub.replace_extension(".pub");
    key_flags = fmt::format(" --key WORKER.key --server-key {}", pub.string());
  }
  if (const auto& elastic = config.fault_tolerance.elastic) {
    log::notice("elastic: workers may join this run while it trains (up to max_workers = {} at "
                "once): disttrain worker --connect {} --join{}",
                elastic->max_workers, listener->endpoint(), key_flags);
  }
  if (first_remote < ranks) {
    log::notice("listening on {} (heartbeats on {}); waiting for worker{} {} to join: "
                "disttrain worker --connect {} --rank R{}",
                listener->endpoint(), heartbeat.endpoint(), ranks - first_remote == 1 ? "" : "s",
                first_remote + 1 == ranks ? std::to_string(first_remote)
                                          : fmt::format("{} to {}", first_remote, ranks - 1),
                listener->endpoint(), key_flags);
  }
  const std::string config_hash = config::config_hash(config);
  try {
    progress::phase(fmt::format("starting {} worker{}", ranks, ranks == 1 ? "" : "s"));
    const auto departed = departed_at_resume(options.checkpointer, config, ranks,
                                             static_cast<int>(plan.shard_rows.size()));
    // Elastic --resume: the join slots alive at the checkpoint are started too, as local ranks.
    const int started = std::max(ranks, static_cast<int>(departed.size()));
    const auto gone = [&](int r) {
      return !departed.empty() && departed[static_cast<std::size_t>(r)];
    };
    for (int r = 0; r < started; ++r) {
      if (!gone(r)) pool->start(r, listener->endpoint());
    }
    const auto join_timeout = first_remote < ranks
                                  ? std::chrono::milliseconds(config.transport.join_timeout_ms)
                                  : kConnectTimeout;
    const auto hellos =
        wait_for_hellos(*listener, *pool, started, first_remote, job, config_hash, join_timeout,
                        departed);
    std::vector<std::string> peers;
    for (const auto& j : hellos) {
      const auto& h = j.hello;
      result.workers.push_back({static_cast<int>(h.rank), h.pid, h.host, 0, {}});
      if (!gone(static_cast<int>(h.rank))) pool->joined(static_cast<int>(h.rank), h.pid);
      peers.push_back(j.peer);
    }

    const std::string config_yaml = config::to_yaml(config);
    std::vector<protocol::Envelope> setups;
    for (int r = 0; r < started; ++r) {
      // A tensor-parallel rank of a linear model sees only its own feature columns.
      const auto rank = static_cast<std::size_t>(r);
      protocol::Setup setup{config_yaml, heartbeat.endpoint(), source_for(plan, rank),
                            plan.segments[rank]};
      setup.source.csv.reset();  // workers seek by the byte offsets in their segments
      setup.peer_secret_key = keys.peer.secret_key;
      setups.push_back(protocol::make_setup(setup));
      if (gone(r)) continue;
      listener->send(peers[rank], protocol::encode(setups.back(), job), deadline_in(kSendDeadline));
    }
    // The coordinator holds the validation rows (workers hold only training rows).
    std::optional<data::Shard> validation;
    if (!plan.validation_rows.empty()) validation = load_validation(config, plan, kind);
    std::vector<double> params;
    CoordinatorSession session(config, plan, params, *listener, *pool, heartbeat, job, result);
    session.set_transport(*transport);
    session.set_members_dir(options.worker_log_dir.parent_path());  // the run folder
    peers.resize(plan.shard_rows.size());  // join slots: no identity until a worker joins
    session.addresses().set_identities(std::move(peers));
    session.set_departed(departed);
    try {
      // The class list covers the held-out rows too: a class seen only there is still a class.
      std::vector<std::string> labels;
      if (validation && kind == data::LabelKind::kCategorical) {
        labels = data::distinct_labels(*validation);
      }
      progress::phase(fmt::format("workers loading their shards ({} rows)", plan.train_rows));
      // A join slot started again holds no rows (the re-plan deals them), and its joiner was
      // in no statistics: the statistics are the starting ranks' shards, as they were.
      auto loaded = session.gather(protocol::Type::kLoaded);
      std::erase_if(loaded, [&](const auto& e) { return static_cast<int>(e.rank) >= ranks; });
      const std::vector<bool> planned_departed(
          departed.begin(), departed.begin() + std::min<std::ptrdiff_t>(
                                                   static_cast<std::ptrdiff_t>(departed.size()),
                                                   ranks));
      const auto finalize = merge_loaded(
          config, plan, with_departed_shards(config, plan, planned_departed, std::move(loaded)),
          std::move(labels), result, options.init);
      std::vector<protocol::Envelope> finalizes;
      for (int r = 0; r < started; ++r) {  // a tensor rank gets the normalization of its columns
        auto mine = finalize;
        if (!plan.columns.empty()) {
          mine.normalization =
              normalization_for(plan, static_cast<std::size_t>(r), finalize.normalization);
        }
        finalizes.push_back(protocol::make_finalize(mine));
        session.send_to(r, finalizes.back());
      }
      session.set_startup(std::move(setups), std::move(finalizes));
      if (config.fault_tolerance.elastic) {  // what a joiner is sent: no rows yet
        protocol::Setup setup{config_yaml, heartbeat.endpoint(), source_for(plan, 0), {},
                              keys.peer.secret_key};
        setup.source.csv.reset();
        session.set_joiner_setup(protocol::make_setup(setup));
      }
      result.normalization = finalize.normalization;
      result.classes = finalize.classes;
      if (validation) {
        data::apply(finalize.normalization, validation->x);
        if (kind == data::LabelKind::kCategorical) data::assign_classes(*validation, finalize.classes);
        session.evaluation().set_validation(std::move(*validation));
      }
      session.evaluation().set_model(models::make_model({config.model,
                                            static_cast<int>(data::input_width(plan.source)),
                                            static_cast<int>(finalize.classes.size())}));
      memory::assign_huge(params, session.model().parameter_count(), 0.0);
      check_message_size(config, params.size());
      if (options.init != nullptr) {
        initial_parameters(*options.init, params);
      } else {
        session.model().init(params, config.seed);
      }
      session.share_peer_endpoints(session.gather(protocol::Type::kReady));

      const auto mode = modes::make_mode(config);
      TimelineRecording recording(config, result);  // output.timeline
      if (options.checkpointer != nullptr) {
        options.checkpointer->set_mode(mode.get());
        session.set_checkpointer(options.checkpointer);
        options.checkpointer->restore(session);
      }
      auto train_start = steady_ms();
      try {
        mode->prepare(session);  // the optimizer's or servers' state: before the clock
        train_start = steady_ms();
        mode->coordinate(session);
      } catch (const Error&) {
        // The checkpoint of the last completed step, while the workers (and replicas) can be asked.
        if (options.checkpointer != nullptr) options.checkpointer->save_on_stop(session);
        result.planned_steps = session.schedule().total_steps();
        throw;
      }
      if (options.checkpointer != nullptr) options.checkpointer->flush(session);
      result.train_seconds = static_cast<double>(steady_ms() - train_start) / 1000.0;
      // training.early_stopping: the best check's parameters are the ones evaluated and written.
      session.evaluation().early_stop().restore_best(params);
      result.early_stopping = session.evaluation().early_stop().summary();
      result.planned_steps = session.schedule().total_steps();
      progress::phase("evaluating the final model");
      result.params = params;
      // Rows of workers lost late in the run (continue) are still part of the final evaluation.
      session.reassign_lost_rows(static_cast<std::uint64_t>(config.training.epochs));
      protocol::Envelope evaluate{.type = protocol::Type::kEvaluate, .step = result.steps};
      evaluate.arrays.push_back(wire::to_bytes(std::span<const double>(params)));
      session.broadcast(std::move(evaluate));
      result.final = merge_evaluations(task, session.gather(protocol::Type::kEvaluation));
      // The per-step check sees the loss before each update; this one sees the last update's.
      if (!std::isfinite(result.final->loss)) {
        fail<TrainingError>("training diverged: the final model's loss over the training rows is "
                            "{}; lower training.optimizer.lr (now {}) or normalize the data",
                            result.final->loss, config.training.optimizer.lr);
      }
      result.validation = session.evaluation().validate(params);

      session.broadcast({.type = protocol::Type::kStop});
      session.expect_exits();
      const auto reports = session.gather(protocol::Type::kReport);
      for (std::size_t r = 0; r < reports.size(); ++r) {
        // By the report's rank: under `continue` lost ranks send none.
        result.workers[reports[r].rank].report = protocol::read_report(reports[r]);
      }
      recording.finish();
      if (!pool->wait_all(kExitTimeout)) {
        log::warn("some workers did not exit within {} ms of the stop; stopping them",
                  kExitTimeout.count());
        pool->stop_all();
      }
      for (const auto& exit : pool->poll()) session.note_late_exit(exit);
      progress::clear();
      result.status = "ok";
    } catch (const Error& e) {
      session.end_joined_workers(e);
      throw;
    }
  } catch (Error& e) {
    result.status = e.exit_code() == ExitCode::kInterrupted ? "interrupted" : "failed";
    result.error = e.what();
    pool->stop_all();
    result.wall_seconds = static_cast<double>(steady_ms() - wall_start) / 1000.0;
    throw;
  }
  result.wall_seconds = static_cast<double>(steady_ms() - wall_start) / 1000.0;
  return result;
}

}  // namespace dt::roles
