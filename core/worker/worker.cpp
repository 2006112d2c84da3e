#include "core/worker/worker.hpp"

#include "core/modes/mode.hpp"
#include "core/coordinator/evaluate.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/keys.hpp"
#include "core/worker/leave.hpp"
#include "core/worker/peers.hpp"
#include "core/worker/shard_load.hpp"
#include "core/data/non_iid.hpp"
#include "core/data/npy.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/net.hpp"
#include "base/random.hpp"
#include "base/resources.hpp"
#include "core/worker/worker_timeline.hpp"
#include "transports/transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

namespace {

void check_cancel(const WorkerOptions& o) {
  if (o.cancel != nullptr && o.cancel->load()) fail<InterruptedError>("worker {} stopped", o.rank);
}

// Waits for the coordinator's next message: until `startup_deadline` without heartbeats (start-
// up), else while the coordinator is not silent for `timeout_ms`. `joining`: the job id of a
// worker that joined by itself, 0 until the coordinator's first message tells it.
protocol::Envelope receive_from(transport::Connection& connection, const WorkerOptions& options,
                                const HeartbeatClient* heartbeat, std::int64_t timeout_ms,
                                Clock::time_point startup_deadline,
                                std::uint64_t* joining = nullptr) {
  bool last_look = false;  // the coordinator seemed silent once: one more, longer look
  for (;;) {
    check_cancel(options);
    if (leave_due(options)) throw LeaveRequest{};  // between steps (leave.hpp)
    auto message = connection.receive(deadline_in(last_look ? kPollSlice * 4 : kPollSlice));
    if (message) {
      std::uint64_t job = options.job_id;
      if (joining != nullptr) {
        if (*joining == 0 && message->header.rank == wire::kCoordinatorRank) {
          *joining = message->header.job_id;
        }
        job = *joining;
      }
      auto envelope = protocol::decode(std::move(*message), job);
      if (envelope.rank != wire::kCoordinatorRank) continue;  // only the coordinator talks here
      return envelope;
    }
    if (heartbeat != nullptr) {
      const auto silent = heartbeat->silent_ms();
      // A worker that was itself stopped (SIGSTOP, a suspended VM) wakes with a stale heartbeat
      // clock and the coordinator's messages still on their way in: it reads them first.
      if (silent <= timeout_ms) {
        last_look = false;
      } else if (!last_look) {
        last_look = true;
        continue;
      } else {
        fail<TransportError>("lost the coordinator at {}: no answer to heartbeats for {} ms "
                             "(fault_tolerance.worker_timeout_ms = {})",
                             options.endpoint, silent, timeout_ms);
      }
    } else if (Clock::now() >= startup_deadline) {
      fail<TimeoutError>(
          "no setup from the coordinator at {} within {} ms: nothing answered there; is the "
          "coordinator running, and is that its address and port?{}",
          options.endpoint, options.startup_timeout.count(),
          options.curve ? " This worker uses CURVE keys: does the coordinator use "
                          "transport.security curve, is --server-key (or $DISTTRAIN_SERVER_KEY) "
                          "its public key, and is this worker's public key among its "
                          "transport.keys.authorized? (It logs keys it refuses.)"
                        : " If the coordinator uses transport.security curve, give this worker "
                          "--key and --server-key (or $DISTTRAIN_SECRET_KEY and "
                          "$DISTTRAIN_SERVER_KEY).");
    }
  }
}

// The coordinator's first message (the setup). A worker that joins by itself says hello every
// second until it comes: a busy coordinator (noticing the lost worker this one replaces) may
// have dropped the first one.
protocol::Envelope await_setup(transport::Connection& connection, WorkerOptions& options,
                               const wire::Message& hello) {
  constexpr std::chrono::milliseconds kHelloEvery{1000};
  const auto deadline = Clock::now() + options.startup_timeout;
  const bool joining = options.job_id == 0;
  for (;;) {
    const auto until = joining ? std::min(deadline, Clock::now() + kHelloEvery) : deadline;
    try {
      return receive_from(connection, options, nullptr, 0, until,
                          joining ? &options.job_id : nullptr);
    } catch (const TimeoutError&) {
      if (const auto refused = connection.refusal();
          refused.kind == transport::Refusal::Kind::kVersion) {
        fail<ConfigError>("the coordinator at {} cannot talk to this worker: {}",
                          options.endpoint, refused.why);
      } else if (refused.kind == transport::Refusal::Kind::kSecurity) {
        fail<ConfigError>("the coordinator at {} refused this worker's connection: {}. {}",
                          options.endpoint, refused.why,
                          options.curve
                              ? "Check that --server-key (or $DISTTRAIN_SERVER_KEY) is the "
                                "coordinator's public key and that this worker's public key is "
                                "among its transport.keys.authorized"
                              : "If the coordinator uses transport.security curve, give this "
                                "worker --key and --server-key (or $DISTTRAIN_SECRET_KEY and "
                                "$DISTTRAIN_SERVER_KEY)");
      }
      if (Clock::now() >= deadline) throw;
    }
    try {
      connection.send(hello, deadline_in(kHelloEvery));
    } catch (const TimeoutError&) {
      // No link to queue it on (a handshake the coordinator refused, say a CURVE key it does
      // not admit): the wait above says what to check when its deadline passes.
    }
  }
}

protocol::Envelope expect(protocol::Envelope envelope, protocol::Type type) {
  if (envelope.type == protocol::Type::kStop) {
    fail<InterruptedError>("the coordinator stopped the run");
  }
  if (envelope.type == protocol::Type::kError) {  // the coordinator refused this worker
    const auto error = protocol::read_error(envelope);
    if (error.exit_code == static_cast<int>(ExitCode::kBadInput)) {
      fail<ConfigError>("the coordinator {}", error.message);
    }
    fail<TrainingError>("the coordinator {}", error.message);
  }
  if (envelope.type != type) {
    fail<ProtocolError>("expected a {} message from the coordinator, got {}",
                        protocol::name_of(type), protocol::name_of(envelope.type));
  }
  return envelope;
}

// Loss and metric sums of the whole shard, in chunks so scratch memory stays bounded.
protocol::Envelope evaluate_shard(WorkerSession& session, const protocol::Envelope& request) {
  const auto params = protocol::doubles(request, 0, session.model().parameter_count());
  const auto total = evaluate_rows(session.model(), params, session.shard());
  const auto rows = session.rows();
  protocol::Envelope reply{.type = protocol::Type::kEvaluation, .rank = session.rank(),
                           .step = request.step};
  reply.fields = {{"rows", rows},
                  {"loss_sum", total.loss_sum},
                  {"correct", total.correct},
                  {"squared_error_sum", total.squared_error_sum}};
  put_scores(session.model(), params, session.shard(), reply);
  return reply;
}

struct Loaded {
  config::Config config;
  data::Shard shard;
  protocol::Setup setup;
};

}  // namespace

int run_worker(transport::Transport& transport, const WorkerOptions& given) {
  WorkerOptions options = given;  // a worker that joins by itself learns the job id
  log::set_thread_prefix(fmt::format("worker {}", options.rank));
  std::unique_ptr<transport::Connection> connection;
  try {
    connection = transport.connect(options.endpoint, options.identity.empty()
                                                         ? protocol::peer_name(options.rank)
                                                         : options.identity);
    const auto hello = protocol::encode(
        protocol::make_hello({options.rank, ::getpid(), net::this_host(), options.config_hash,
                              options.join}),
        options.job_id);
    connection->send(hello, deadline_in(kSendDeadline));
    const auto startup_deadline = Clock::now() + options.startup_timeout;
    const auto setup_message =
        expect(await_setup(*connection, options, hello), protocol::Type::kSetup);
    const bool replacement = setup_message.generation != 0;  // a lost worker's (restart)
    if (options.join) {  // admitted to a running job (elastic): the coordinator chose the rank
      options.rank = static_cast<std::uint32_t>(protocol::count(setup_message, "rank"));
      log::set_thread_prefix(fmt::format("worker {}", options.rank));
    }
    auto setup = protocol::read_setup(setup_message);
    const auto config = config::parse(setup.config_yaml, "<config from the coordinator>", "/");
    const auto timeout_ms = static_cast<std::int64_t>(config.fault_tolerance.worker_timeout_ms);
    HeartbeatClient heartbeat(transport, setup.heartbeat_endpoint, options.job_id, options.rank,
                              std::chrono::milliseconds(config.fault_tolerance.heartbeat_ms));

    const auto task = config::task_of(config.model);
    const auto kind = data::label_kind(task);
    if (!options.data.empty()) {
      if (config.data.synthetic) {
        fail<ConfigError>("--data {}: this run's data is synthetic (every worker generates its "
                          "rows from the seed); drop --data",
                          options.data.string());
      }
      data::use_local_copy(options.data, config.data, setup.source, setup.segments);
    }
    auto load = load_worker_shard(config, setup, kind, options.rank,
                                  given.job_id == 0 && options.data.empty());
    connection->send(protocol::encode(std::move(load.loaded), options.job_id),
                     deadline_in(kSendDeadline));

    const auto finalize = protocol::read_finalize(
        expect(receive_from(*connection, options, &heartbeat, timeout_ms, startup_deadline),
               protocol::Type::kFinalize),
        setup.source.features.size());
    finish_shard(finalize, kind, load);
    data::Shard& shard = load.shard;
    const auto model = models::make_model(
        {config.model, static_cast<int>(data::input_width(setup.source)),
         static_cast<int>(finalize.classes.size())});
    // transport.security curve: peer links serve and trust the run's peer key (keys.hpp).
    std::unique_ptr<transport::Transport> peer_transport;
    if (!setup.peer_secret_key.empty() && needs_peer_links(config)) {
      peer_transport = transport.with_security(peer_security(
          {transport::public_key_of(setup.peer_secret_key), setup.peer_secret_key}));
    }
    std::unique_ptr<collectives::PeerLinks> peers;
    if (needs_peer_links(config)) {
      peers = open_peer_links(peer_transport ? *peer_transport : transport, options, heartbeat,
                              config, setup_message.generation);
    }
    protocol::Envelope ready{.type = protocol::Type::kReady, .rank = options.rank};
    if (peers) ready.fields["peer_endpoint"] = peers->endpoint();
    connection->send(protocol::encode(std::move(ready), options.job_id),
                     deadline_in(kSendDeadline));

    WorkerSession session(options, config, *connection, heartbeat, *model, shard,
                          finalize.train_rows, finalize.steps_per_epoch);
    session.set_peer_links(peers.get());
    timeline::Recorder recorder(config.output.timeline_steps);  // output.timeline, reported
    const timeline::Scope recording(config.output.timeline_steps > 0 ? &recorder : nullptr);
    if (replacement) session.disarm_faults();
    session.set_transport(transport);
    // Share k of m of a lost worker's rows (continue): rows k, k + m, ... of its shard.
    session.set_share_taker([&](const protocol::Envelope& message, std::uint64_t from_epoch) {
      auto lost = protocol::read_setup(message);
      if (!options.data.empty() && lost.source.file.empty()) {  // the same data.path file
        data::use_local_copy(options.data, config.data, lost.source, lost.segments);
      }
      const auto share = protocol::count(message, "share");
      const auto shares = protocol::count(message, "shares");
      const auto all = data::load_shard(config, lost.source, lost.segments, kind);
      auto mine = data::every_nth_row(all, share, shares);
      const auto rows = static_cast<std::uint64_t>(mine.y.size());
      data::apply(finalize.normalization, mine.x);
      if (kind == data::LabelKind::kCategorical) data::assign_classes(mine, finalize.classes);
      const bool replan = message.fields.contains("replan");  // elastic: every row re-dealt
      session.adopt_rows(std::move(mine), from_epoch, replan);
      log::info("took {} rows of {} (share {} of {}) from epoch {}", rows, replan ? "all (a "
                "re-plan)" : fmt::format("lost worker {}", protocol::count(message, "lost_rank")),
                share + 1, shares, from_epoch + 1);
      return rows;
    });
    const auto mode = modes::make_mode(config);
    options.may_leave = arm_leave(config, options);
    for (;;) {
      const auto message = session.receive();
      if (session.answer_repeat(message)) continue;
      switch (message.type) {
        case protocol::Type::kEvaluate:
          options.may_leave = false;  // training is over: a leave would lose rows unevaluated
          session.adopt_all();  // rows dealt too late to train on are still evaluated
          if (!mode->evaluate(session, message)) session.send(evaluate_shard(session, message));
          break;
        case protocol::Type::kPeers:
          session.set_peer_endpoints(protocol::read_peers(message));
          break;
        case protocol::Type::kReassign: {
          const auto rows = session.take_share(message, protocol::count(message, "from_epoch"));
          protocol::Envelope ack{.type = protocol::Type::kReassigned, .step = message.step};
          ack.fields = {{"rows", rows}};
          session.send(std::move(ack));
          break;
        }
        case protocol::Type::kError:  // the coordinator gave this (joined) worker up
          (void)expect(message, protocol::Type::kStop);  // throws with its words
          break;
        case protocol::Type::kStop: {
          auto stats = session.report();
          stats.load_seconds = load.seconds;
          if (timeline::current() != nullptr) {
            stats.timeline = timeline::encode(recorder.spans());
            stats.clock_ns = timeline::now_ns();
          }
          auto report = protocol::make_report(stats);
          report.rank = options.rank;
          session.send(std::move(report));
          log::info("done");
          return 0;
        }
        default:
          mode->work(session, message);
      }
    }
  } catch (const LeaveRequest&) {
    return leave_run(*connection, options);
  } catch (const Error& e) {
    if (e.exit_code() == ExitCode::kInterrupted) {
      log::info("{}", e.what());
      return static_cast<int>(e.exit_code());
    }
    log::error("{}", e.what());
    if (connection) {
      try {
        const char* kind = e.exit_code() == ExitCode::kBadInput ? "data" : e.kind();
        auto msg = protocol::make_error({kind, e.what(), static_cast<int>(e.exit_code())});
        msg.rank = options.rank;
        connection->send(protocol::encode(msg, options.job_id), deadline_in(kPollSlice * 20));
      } catch (const Error&) {  // the coordinator is gone: it learns of this from the exit
      }
    }
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::string what = resources::describe_exhaustion(e);  // out of memory, threads, files
    if (what.empty()) what = fmt::format("internal error: {}", e.what());
    log::error("{}", what);
    if (connection) {
      try {
        auto msg = protocol::make_error({"internal", what, static_cast<int>(ExitCode::kTrainingFailed)});
        msg.rank = options.rank;
        connection->send(protocol::encode(msg, options.job_id), deadline_in(kPollSlice * 20));
      } catch (const Error&) {}
    }
    return static_cast<int>(ExitCode::kTrainingFailed);
  }
}

WorkerSession::WorkerSession(const WorkerOptions& options, const config::Config& config,
                             transport::Connection& connection, HeartbeatClient& heartbeat,
                             models::Model& model, data::Shard& shard, std::uint64_t train_rows,
                             std::uint64_t steps_per_epoch)
    : options_(options),
      config_(config),
      connection_(connection),
      heartbeat_(heartbeat),
      model_(model),
      shard_(shard),
      train_rows_(train_rows),
      steps_per_epoch_(std::max<std::uint64_t>(1, steps_per_epoch)),
      faults_(config.faults, options.rank) {}

protocol::Envelope WorkerSession::receive() {
  const auto start = Clock::now();
  // Idle work (warm()): while nothing has come, the next batch's rows a slice at a time.
  while (warmer_.pending() && (take_notices(), early_.empty())) (void)warmer_.slice();
  for (;;) {
    protocol::Envelope e;
    if (!early_.empty()) {
      e = std::move(early_.front());
      early_.pop_front();
    } else {
      e = receive_from(connection_, options_, &heartbeat_,
                       config_.fault_tolerance.worker_timeout_ms, Clock::time_point::max());
    }
    if (const auto h = notice_handlers_.find(e.type); h != notice_handlers_.end() && h->second) {
      h->second(e);
      continue;
    }
    const auto end = Clock::now();
    comm_seconds_ += std::chrono::duration<double>(end - start).count();
    note_request(e, start, end);  // output.timeline: the wait for a step's (or round's) request
    return e;
  }
}

void WorkerSession::receive_in_place(std::uint64_t min_frame) {
  connection_.receive_in_place(min_frame);
}

void WorkerSession::on_notice(protocol::Type type, NoticeHandler handler) {
  notice_handlers_[type] = std::move(handler);
}

void WorkerSession::take_notices() {
  while (auto message = connection_.receive(Clock::now())) {
    auto e = protocol::decode(std::move(*message), options_.job_id);
    if (e.rank != wire::kCoordinatorRank) continue;  // only the coordinator talks here
    if (const auto h = notice_handlers_.find(e.type); h != notice_handlers_.end() && h->second) {
      h->second(e);
    } else {
      early_.push_back(std::move(e));
    }
  }
}

bool WorkerSession::poll_coordinator(protocol::Type type) {
  while (auto message = connection_.receive(Clock::now())) {
    auto envelope = protocol::decode(std::move(*message), options_.job_id);
    if (envelope.rank != wire::kCoordinatorRank) continue;
    // The coordinator ended the run (or gave this worker up) while it waited on its peers.
    if (envelope.type == protocol::Type::kError) (void)expect(std::move(envelope), type);
    early_.push_back(std::move(envelope));
  }
  return std::any_of(early_.begin(), early_.end(),
                     [type](const protocol::Envelope& e) { return e.type == type; });
}

void WorkerSession::send(protocol::Envelope envelope) {
  const auto start = Clock::now();
  const bool step_reply = is_step_reply(envelope.type);  // output.timeline: a `send` span
  envelope.rank = options_.rank;
  // A reply belongs to the attempt of the request it answers (replies to abandoned ones drop).
  if (last_request_) envelope.generation = last_request_->generation;
  // Kept until the next request: the answer to a repeat of this one (answer_repeat). A dropped
  // message is kept too: it was lost on the way, the work behind it was done.
  last_reply_ = protocol::encode(std::move(envelope), options_.job_id);
  if (faults_.before_send(true)) connection_.send(*last_reply_, deadline_in(kSendDeadline));
  const auto end = Clock::now();
  comm_seconds_ += std::chrono::duration<double>(end - start).count();
  if (step_reply) timeline::span_between(timeline::Phase::kSend, start, end);
}

bool WorkerSession::answer_repeat(const protocol::Envelope& request) {
  RequestKey key{request.type, request.step, request.generation, request.fields, {}};
  for (std::size_t i = 0; i < request.arrays.size(); ++i) {  // copied or in place alike
    key.array_sizes.push_back(protocol::frame_of(request, i).size());
  }
  if (last_request_ && *last_request_ == key) {
    if (last_reply_) {
      log::info("the coordinator asked again for the reply to its {} request of step {}: sent "
                "it again (the work is not redone)",
                protocol::name_of(request.type), request.step);
      connection_.send(*last_reply_, deadline_in(kSendDeadline));
    }
    return true;
  }
  last_request_ = std::move(key);
  last_reply_.reset();
  faults_.end_step();
  return false;
}

void WorkerSession::disarm_faults() {
  if (faults_.empty()) return;
  faults_.disarm();
  log::info("fault injection is off: this worker replaces a lost one");
}

void WorkerSession::begin_step(std::uint64_t step) { fault_seconds_ += faults_.begin_step(step); }
transport::Transport& WorkerSession::transport() const {
  if (transport_ == nullptr) fail<TrainingError>("internal error: the session has no transport");
  return *transport_;
}

void WorkerSession::check_alive() const {
  check_cancel(options_);
  const auto silent = heartbeat_.silent_ms();
  const auto timeout = config_.fault_tolerance.worker_timeout_ms;
  if (silent > timeout) {
    fail<TransportError>("lost the coordinator at {}: no answer to heartbeats for {} ms "
                         "(fault_tolerance.worker_timeout_ms = {})",
                         options_.endpoint, silent, timeout);
  }
}

void WorkerSession::add_compute_seconds(double seconds) {
  seconds += fault_seconds_;  // an injected `slow` is part of the step
  fault_seconds_ = 0;
  compute_seconds_ += seconds;
  ++steps_;
  step_seconds_.add(seconds);
  heartbeat_.set_progress(steps_, compute_seconds_);
}

protocol::Report WorkerSession::report() const {
  protocol::Report r;
  r.steps = steps_;
  r.compute_seconds = compute_seconds_;
  r.comm_seconds = comm_seconds_;
  r.bytes_sent = connection_.counters().bytes_sent + extra_bytes_sent_;
  r.bytes_received = connection_.counters().bytes_received + extra_bytes_received_;
  for (double q : {0.5, 0.9, 0.99, 1.0}) {
    r.step_seconds_percentiles.push_back(step_seconds_.percentile(q));
  }
  r.max_rss_bytes = resources::peak_rss_bytes();
  log::info("warmed {} rows of next steps while waiting", warmer_.rows_warmed());
  return r;
}

}  // namespace dt::roles
