#pragma once
// The coordinator <-> worker protocol: message types and one encode/decode pair per exchange.
// Every message is a wire header plus payload frames: frame 0 is a small JSON object with the
// control fields, further frames carry raw arrays (parameters, gradients, statistics). Decoding
// checks the type, the frame count and every array's length, and throws ProtocolError naming
// the message and the field; nothing reads past a buffer.
//
// core/protocol/: what every role shares: the messages (this file), heartbeats, CURVE key files of
// a run, timing constants, the log of dropped messages, injected faults.
// May use: base/, transports/, core/config/, core/data/.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "transports/wire.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dt::protocol {

enum class Type : std::uint16_t {
  kHello = 1,       // worker -> coordinator: I am rank r (pid, host)
  kSetup = 2,       // coordinator -> worker: resolved config, data source, my segments
  kLoaded = 3,      // worker -> coordinator: shard loaded; column statistics and label set
  kFinalize = 4,    // coordinator -> worker: normalization and classes
  kReady = 5,       // worker -> coordinator: model built, ready to train
  kStep = 6,        // coordinator -> worker: compute step s at these parameters
  kGradient = 7,    // worker -> coordinator: gradient sum, rows, loss sum of my part of the batch
  kEvaluate = 8,    // coordinator -> worker: evaluate these parameters on my whole shard
  kEvaluation = 9,  // worker -> coordinator: loss sum, correct, squared error, rows; for
                    // classification the clipped log-loss sum, and for binary tasks the
                    // score histogram as array 0 (roles::put_scores)
  kStop = 10,       // coordinator -> worker: training is over, report and exit
  kReport = 11,     // worker -> coordinator: counters and timings
  kError = 12,      // worker -> coordinator: I failed, here is why (then exits)
  kPing = 13,       // heartbeat, both ways
  kPong = 14,
  // 15-19: peer links and the ring topology (core/worker/peers.cpp, core/modes/ring.cpp).
  kPeers = 15,       // coordinator -> worker: every worker's peer endpoint, by rank
  kPeerChunk = 16,   // worker -> worker: a piece of a collective (transports/collectives)
  kRingLoss = 17,    // worker -> coordinator (ring): my loss sum and rows, after the step
  kRingFinish = 18,  // coordinator -> worker (ring): training is over, send your parameters
  kRingResult = 19,  // worker -> coordinator (ring): parameters (rank 0) or their digest, counters
  // parameters mode (20-24): one round of local training, both ways carrying whole models.
  kRound = 20,        // coordinator -> client: the merged parameters; train this round's steps
  kRoundResult = 21,  // client -> coordinator: my parameters, rows trained, loss sum, steps
  // Parameter servers (aggregation.servers, async mode); see core/servers/param_server.hpp.
  kServers = 25,  // coordinator -> worker: the parameter servers' endpoints, in key order
  kPull = 26,     // worker -> server: send me your slice (async: when I may start my next step)
  kPush = 27,     // worker -> server: my gradient sum for your keys, rows, loss sum, version
  kSlice = 28,    // server -> worker: the current slice of the parameters and its version
  kDone = 29,     // worker -> coordinator: async mode: my local epochs are done
  // Tensor parallelism (30-34, see core/modes/tensor.cpp).
  kTensorSetup = 30,  // coordinator -> worker: your slice (tensor, slice, replica, model inputs)
  kTensorReady = 31,  // worker -> coordinator: slice built, its columns checked
  // Checkpoints (32-33, see core/coordinator/resume.hpp).
  kResumeState = 32,   // coordinator -> worker: continue from this state (a resumed run: ring
                       // replicas' parameters and optimizer, parameters-mode clients' position
                       // and optimizer); ring rank 0 -> coordinator: mine (a stop checkpoint)
  kStateRequest = 33,  // coordinator -> ring rank 0: send your state after step s (kResumeState)
  // Failure handling (35-39).
  kReassign = 35,    // coordinator -> survivor (continue): load share k of m of a lost shard
  kReassigned = 36,  // survivor -> coordinator: loaded; the rows it adds from the next epoch
  kLeave = 37,       // worker -> coordinator (elastic): I leave on purpose after my last reply
  // Re-forming peer groups after a lost worker (40-44, see core/modes/ring_reform.hpp).
  kRingReform = 40,  // coordinator -> worker: abandon the step; the ring is now these members
  // The sparse star (45-46, see core/modes/sparse_star.hpp).
  kKeyRequest = 45,  // coordinator -> worker: send the keys of your batch of step s
  kKeys = 46,        // worker -> coordinator: that key list (a key frame, key_frames.hpp)
  // Parameter-server failures (50-54).
  kServerMoved = 50,  // coordinator -> worker (a notice, not a request): server k was replaced;
                      // its new endpoint and the update it was restored at
  kEnd = 51,  // server -> worker (async, training.early_stopping): training is over; answers a
              // push or pull instead of the slice: push no more, send the coordinator kDone
};

[[nodiscard]] const char* name_of(Type type);
// Whether `reply` is the one message a worker sends back for `request` (kStep -> kGradient or
// kRingLoss, kRound -> kRoundResult, ...): only such a request is re-sent when its reply is
// overdue, and a worker answers a repeated one from its cache.
[[nodiscard]] bool answers(Type reply, Type request);
[[nodiscard]] std::string peer_name(std::uint32_t rank);  // "w3"; heartbeat sockets "h3"

// A message under construction or received: header, JSON fields, array frames.
struct Envelope {
  Type type{};
  std::uint32_t rank = wire::kCoordinatorRank;
  std::uint64_t step = 0;
  std::uint32_t generation = 0;  // see transports/wire.hpp
  nlohmann::json fields = nlohmann::json::object();
  std::vector<wire::Bytes> arrays;
  // Arrays read in place (wire::Message::views): views[i], when not empty, is array i (arrays[i]
  // is then empty), valid while `lease` lives and is not released. Read arrays through frame_of
  // or doubles. A sender may lend arrays so too (wire::Message::views: encode carries them).
  std::vector<std::span<const std::byte>> views;
  std::shared_ptr<wire::Lease> lease;
};

// Takes the envelope by value: its array frames (parameters, gradients) move into the message
// instead of being copied a second time.
[[nodiscard]] wire::Message encode(Envelope envelope, std::uint64_t job_id);
// ProtocolError for an unknown type, a missing or non-object JSON frame, or a job id mismatch.
[[nodiscard]] Envelope decode(const wire::Message& message, std::uint64_t job_id);
// The same, moving the array frames out of `message` instead of copying them.
[[nodiscard]] Envelope decode(wire::Message&& message, std::uint64_t job_id);

// Typed field access with errors that name the message and the field.
[[nodiscard]] const nlohmann::json& field(const Envelope& e, const char* name);
// A number field; JSON has no NaN or infinity (they travel as null), so null reads as NaN and
// a diverging worker's loss stays visibly non-finite.
[[nodiscard]] double number(const Envelope& e, const char* name);
// A non-negative integer field (ProtocolError otherwise).
[[nodiscard]] std::uint64_t count(const Envelope& e, const char* name);
// Array `index` of `e`, the frame as it came (ProtocolError when the message has fewer arrays).
[[nodiscard]] std::span<const std::byte> frame_of(const Envelope& e, std::size_t index);
[[nodiscard]] std::span<const double> doubles(const Envelope& e, std::size_t index,
                                              std::size_t expected_count);
[[nodiscard]] std::span<const double> doubles(const Envelope& e, std::size_t index);
[[nodiscard]] wire::Bytes u64_bytes(std::span<const std::uint64_t> values);
[[nodiscard]] std::vector<std::uint64_t> u64s(const Envelope& e, std::size_t index);

// Exchange payloads that several places build or read.
struct Hello {
  std::uint32_t rank = 0;
  std::int64_t pid = 0;
  std::string host;
  // A worker that read the config itself (a launcher started every rank with the same command
  // line) sends config_hash(its config); the coordinator refuses a different one. Empty: the
  // worker takes the coordinator's config.
  std::string config_hash;
  // `disttrain worker --join` (fault_tolerance.elastic): asks to join a running job; `rank` is
  // the slot it asks for, or kAnyRank for the coordinator's choice (session_joins.cpp).
  bool join = false;
};
inline constexpr std::uint32_t kAnyRank = 0xFFFFFFFE;
[[nodiscard]] Envelope make_hello(const Hello& hello);
[[nodiscard]] Hello read_hello(const Envelope& e);

struct Setup {
  std::string config_yaml;
  std::string heartbeat_endpoint;
  data::SourceInfo source;  // csv index omitted: workers get byte offsets through segments
  std::vector<data::Segment> segments;
  // transport.security curve: the secret of the run's peer-link key pair (core/protocol/keys.hpp),
  // sent only over the encrypted link; empty otherwise. Never logged.
  std::string peer_secret_key;
};
[[nodiscard]] Envelope make_setup(const Setup& setup);
[[nodiscard]] Setup read_setup(const Envelope& e);

struct Loaded {
  std::uint64_t rows = 0;
  data::ColumnStats stats;
  std::vector<std::string> labels;  // distinct raw labels (categorical tasks only)
};
[[nodiscard]] Envelope make_loaded(const Loaded& loaded);
[[nodiscard]] Loaded read_loaded(const Envelope& e, std::size_t features);

struct Finalize {
  data::Normalization normalization;
  std::vector<std::string> classes;
  std::uint64_t train_rows = 0;       // over all workers
  std::uint64_t steps_per_epoch = 0;  // the same for every worker
};
[[nodiscard]] Envelope make_finalize(const Finalize& finalize);
[[nodiscard]] Finalize read_finalize(const Envelope& e, std::size_t features);

// kPeers: the peer endpoint of every rank; a worker reports its own in kReady's
// "peer_endpoint" field (absent when it opened no peer listener).
[[nodiscard]] Envelope make_peers(const std::vector<std::string>& endpoints);
[[nodiscard]] std::vector<std::string> read_peers(const Envelope& e);

struct WorkerError {
  std::string kind;  // "data", "config", "training", ...
  std::string message;
  int exit_code = 3;
};
[[nodiscard]] Envelope make_error(const WorkerError& error);
[[nodiscard]] WorkerError read_error(const Envelope& e);

struct Report {
  std::uint64_t steps = 0;
  double compute_seconds = 0;
  double comm_seconds = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::vector<double> step_seconds_percentiles;  // p50, p90, p99, max of per-step compute time
  std::uint64_t max_rss_bytes = 0;               // the worker's peak resident set size
  double load_seconds = 0;  // its shard's load, check, statistics and normalization (shard_load.hpp)
  // output.timeline: the worker's spans (base/timeline.hpp's encoding; empty when off) and its
  // CLOCK_MONOTONIC when it sent the report (the coordinator's estimate of a remote clock).
  std::vector<std::byte> timeline;
  std::int64_t clock_ns = 0;
};
[[nodiscard]] Envelope make_report(const Report& report);
[[nodiscard]] Report read_report(const Envelope& e);

}  // namespace dt::protocol
