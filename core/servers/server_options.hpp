#pragma once
// What a parameter server is given and what it gives back, apart from the server itself
// (param_server.hpp) so that its group, its recovery and checkpoints can use them without the
// server's threading: ServerOptions (how one is set up), ServerState and ServerCopy (its slice
// and optimizer state at an update, for checkpoints and for a replacement), AppliedUpdate (one
// push as the loss log sees it) and ServerStats (what summary.json reports of it).

#include "core/config/config.hpp"
#include "base/timeline.hpp"
#include "core/models/optim.hpp"
#include "core/protocol/protocol.hpp"
#include "core/servers/server_state.hpp"
#include "transports/half_codec.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace dt::roles {

struct ServerCopy;
class NormExchange;

// How one server is set up: its keys, its workers, its optimizer and what it keeps.
struct ServerOptions {
  int index = 0;
  KeyRange range;
  int workers = 0;
  bool asynchronous = false;
  // aggregation.compression (sync only): the workers' pushes arrive as this codec's frames.
  std::optional<wire::HalfCodec> codec;
  // aggregation.compression {topk} (sync only): the pushes are top-k frames of the range's keys.
  bool topk = false;
  config::OptimizerConfig optimizer;
  // The updates of the whole run (sync: steps; async: pushes), for an lr schedule's total.
  std::uint64_t schedule_steps = 0;
  std::vector<L2Block> l2;  // the range's keys with an L2 coefficient (server_state.hpp)
  bool sparse_rows = false;  // keyed rounds: capture() keeps its copy's KeyMarks
  std::uint64_t job_id = 0;
  // output.timeline: the server thread's recorder (owned with its group); null: not recorded.
  std::shared_ptr<timeline::Recorder> recorder;
  // Sync with training.clip_norm and several servers: the exchange of the round's partial norms
  // (norm_exchange.hpp), shared by the group's servers; the server's optimizer then clips not
  // on its own. Null otherwise.
  std::shared_ptr<NormExchange> norms;
  // Async with training.clip_norm and several servers: each push carries its clip factor, which
  // its worker computed over the whole gradient (core/modes/push_clip.hpp); the server's
  // optimizer then clips not on its own.
  bool clip_from_push = false;
  // async only
  std::vector<std::uint64_t> worker_steps;  // steps each worker will push
  std::optional<int> max_staleness;
  bool staleness_lr = false;
  bool keep_log = false;  // record every applied update for the coordinator's loss log
  // Copy the slice after every this many updates (and after the last): the parameters the loss
  // log's validation must use at that update, since the servers move on before the
  // coordinator reads them. 0: none.
  std::uint64_t snapshot_every = 0;
  // Async: keep the state after every this many updates for a checkpoint (state_at). 0: none.
  std::uint64_t checkpoint_every = 0;
  // Async: write `copy` at the start (the constructor) and after every this many updates, for
  // a replacement should this server fail (param_server_copies.cpp). 0: none.
  std::uint64_t copy_every = 0;
  std::shared_ptr<ServerCopy> copy;
  // A resumed run: the updates (rounds) already done, the slice's optimizer state then, and
  // (async) each worker's completed steps.
  std::uint64_t start_version = 0;
  std::optional<models::OptimizerState> optimizer_state;
  std::vector<std::uint64_t> start_completed;
  // Injected faults aimed at this server (config `server: k`); a replacement has none.
  std::vector<config::FaultConfig> faults;
  // 0 for the first server of this key range, n for its n-th replacement (a server that
  // failed): it listens on a new endpoint.
  int incarnation = 0;
};

// A server's slice and optimizer state after `version` updates (a checkpoint's part).
struct ServerState {
  std::uint64_t version = 0;
  std::vector<double> slice;
  models::OptimizerState optimizer;
  std::vector<std::uint64_t> worker_steps;  // async: each worker's pushes applied
  // Sparse rows: the keys that may be nonzero (sync: capture keeps them; async: the states
  // kept for checkpoints, written and read at them).
  KeyMarks marks;
};
// `out` = that slice and optimizer state (its version, worker_steps and marks aside), in out's
// buffers when they have the sizes already, else in fresh ones on huge pages (copy_huge): the
// copies a server keeps are written again and again, some at random keys.
void copy_state(const std::vector<double>& slice, const models::OptimizerState& optimizer,
                ServerState& out);
// A ServerState's parts where they lie: read(slice, optimizer state, worker steps, marks);
// marks: the keys outside which every value is zero (null: unknown, read the width).
using StateReader = std::function<void(std::span<const double>, const models::OptimizerState&,
                                       const std::vector<std::uint64_t>&, const KeyMarks*)>;

// A copy of a server's state kept apart from the server (the coordinator's): async servers write
// it as they go (ServerOptions::copy_every), and it outlives a server that fails. Its own mutex:
// a server holds its mu_ while it writes, the coordinator only this one while it reads.
struct ServerCopy {
  std::mutex mu;
  ServerState state;
  double seconds = 0;  // spent writing it
};

// A change of the workers that the coordinator's thread posts to a server's thread
// (ParameterServer::post_news) and the server takes between messages: a worker dropped,
// replaced, joined, or a deal of rows.
struct WorkerNews {
  int rank = 0;
  enum class Kind { kDrop, kReplace, kJoin, kDeal } kind = Kind::kDrop;
  std::uint64_t steps = 0;  // kJoin: the joiner's plan
  std::uint64_t ticket = 0;
  std::optional<protocol::Envelope> deal;
};

// One push as applied by a server (async mode's loss log).
struct AppliedUpdate {
  std::uint64_t version = 0;  // the server's version once applied
  int rank = 0;
  std::uint64_t step = 0;  // the worker's local step
  double loss_sum = 0;
  std::uint64_t rows = 0;
  std::uint64_t planned = 0;  // the worker's planned steps as of this push (0: not said)
};

struct ServerStats {
  std::uint64_t version = 0;
  transport::Counters traffic;
  StalenessStats staleness;
  std::uint64_t max_clock_gap = 0;
  std::uint64_t half_values = 0;  // aggregation.compression: values pushed compressed,
  std::uint64_t half_bytes = 0;   // and the bytes of their frames
  std::uint64_t topk_entries = 0;  // top-k: the (key, value) pairs those frames held
  std::vector<std::uint64_t> worker_steps;                 // completed, per rank
  std::vector<int> missing;  // sync: ranks whose push of a started round has not arrived
  std::vector<std::vector<std::uint64_t>> staleness_of;    // per rank, per local step
};

}  // namespace dt::roles
