// fault_tolerance and faults: the failure policy, checkpoints, stragglers, and the faults a
// test injects.

#include <fmt/format.h>

#include <climits>

#include "core/config/internal.hpp"
#include "base/text.hpp"

namespace dt::config::detail {

FaultToleranceConfig parse_fault_tolerance(const Section& s) {
  FaultToleranceConfig c;
  c.heartbeat_ms = to_int(s.integer("heartbeat_ms", c.heartbeat_ms, 10));
  c.worker_timeout_ms = to_int(s.integer("worker_timeout_ms", c.worker_timeout_ms, 1));
  // A timeout under two heartbeats would declare a worker lost after one late heartbeat.
  const std::int64_t least = 2 * static_cast<std::int64_t>(c.heartbeat_ms);
  if (c.worker_timeout_ms < least) {
    if (s.has("worker_timeout_ms")) {
      s.fail("worker_timeout_ms",
             fmt::format("expected an integer >= {} (twice fault_tolerance.heartbeat_ms), got {}",
                         least, c.worker_timeout_ms));
    }
    s.fail("heartbeat_ms",
           fmt::format("needs fault_tolerance.worker_timeout_ms >= {} (twice the heartbeat), but "
                       "it is {} (the default); set fault_tolerance.worker_timeout_ms",
                       least, c.worker_timeout_ms));
  }
  c.on_worker_failure = s.choice("on_worker_failure", c.on_worker_failure, kFailurePolicies);
  c.max_restarts = to_int(s.integer("max_restarts", c.max_restarts, 0));
  c.checkpoint_every_steps =
      s.section("checkpoint_every").integer("steps", c.checkpoint_every_steps, 0, INT64_MAX);
  c.straggler_factor = s.number("straggler_factor", c.straggler_factor, Range::kNonNegative);
  if (c.straggler_factor > 0 && c.straggler_factor <= 1) {
    s.fail("straggler_factor",
           fmt::format("expected 0 (never warn) or a factor above 1, got {}; at {} every worker "
                       "would be a straggler of itself",
                       text::format_double(c.straggler_factor),
                       text::format_double(c.straggler_factor)));
  }
  if (s.has("elastic")) c.elastic = parse_elastic(s.section("elastic"));
  return c;
}

std::vector<FaultConfig> parse_faults(const Section& root, std::uint64_t seed) {
  std::vector<FaultConfig> faults;
  if (!root.has("faults")) return faults;
  const YAML::Node list = root.node("faults");
  if (!list.IsSequence()) {
    root.fail("faults", fmt::format("expected a list of faults like [{{rank: 2, at_step: 40, "
                                    "action: kill}}], got {}",
                                    describe(list)));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Section s = root.item("faults", i);
    FaultConfig f;
    if (s.has("rank") && s.has("server")) {
      s.fail_here("set rank (a worker's fault) or server (a parameter server's), not both");
    }
    if (!s.has("rank") && !s.has("server")) {
      s.fail_missing("rank", "the worker rank the fault hits, e.g. rank: 1; or server: k for a "
                             "parameter server");
    }
    if (!s.has("action")) s.fail_missing("action", "one of kill, hang, slow, drop, delay, leave");
    if (s.has("server")) {
      f.rank = -1;
      f.server = to_int(s.integer("server", 0, 0));
    } else {
      f.rank = to_int(s.integer("rank", 0, 0));
    }
    f.action = s.choice("action", f.action, kFaultActions);
    if (f.server >= 0 && f.action != FaultAction::kKill && f.action != FaultAction::kHang) {
      s.fail("action", fmt::format("a parameter server's fault is kill or hang, got {}",
                                   name_of(f.action)));
    }
    const bool at = s.has("at_step");
    const bool p = s.has("probability");
    if (at == p) {
      s.fail_here(at ? "set at_step or probability, not both"
                     : "say when: at_step: N (a worker step) or probability: p (each step)");
    }
    if (at) f.at_step = static_cast<std::uint64_t>(s.integer("at_step", 0, 0, INT64_MAX));
    if (p) {
      f.probability = s.number("probability", 0, Range::kPositive);
      if (f.probability > 1) {
        s.fail("probability", fmt::format("expected a probability in (0, 1], got {}",
                                          text::format_double(f.probability)));
      }
    }
    f.ms = to_int(s.integer("ms", f.ms, 0));
    f.seed = static_cast<std::uint64_t>(s.integer("seed", static_cast<std::int64_t>(seed), 0, INT64_MAX));
    faults.push_back(f);
  }
  return faults;
}

namespace {

// A server fault needs server threads (aggregation.servers > 1 with gradients, or async) and a
// server of that index. The servers live in the coordinator process, so any transport will do.
void check_server_fault(const Section& s, const Config& c, const FaultConfig& f) {
  const AggregationConfig& a = c.aggregation;
  const bool has_servers =
      a.mode == AggregationMode::kAsync ||
      (a.mode == AggregationMode::kGradients && a.topology == Topology::kStar && a.servers > 1);
  if (!has_servers) {
    s.fail("server", "this run has no parameter server threads: server faults need "
                     "aggregation.servers > 1 (gradients, star) or aggregation.mode async");
  }
  if (f.server >= a.servers) {
    s.fail("server", fmt::format("is {} but the run has {} parameter server(s) (0 to {}); pick "
                                 "one of them",
                                 f.server, a.servers, a.servers - 1));
  }
}

}  // namespace

void check_fault_tolerance(const Section& root, const Config& c) {
  check_elastic(root, c);
  const int workers = worker_count(c);
  for (std::size_t i = 0; i < c.faults.size(); ++i) {
    const Section s = root.item("faults", i);
    if (c.faults[i].server >= 0) {
      check_server_fault(s, c, c.faults[i]);
      continue;
    }
    if (c.faults[i].rank >= workers) {
      s.fail("rank", fmt::format("is {} but the run has {} workers (ranks 0 to {}); pick one of "
                                 "them",
                                 c.faults[i].rank, workers, workers - 1));
    }
    if (c.transport.type == TransportType::kInproc) {
      s.fail("action", "faults are injected into worker processes, but transport.type inproc "
                       "runs the workers as threads of one process; use transport.type ipc");
    }
  }
  const auto policy = c.fault_tolerance.on_worker_failure;
  if (policy == FailurePolicy::kContinue && c.parallelism.tensor > 1 && c.shards.count < 2) {
    root.section("fault_tolerance")
        .fail("on_worker_failure",
              "continue cannot work with parallelism.tensor > 1 and one model replica "
              "(shards.count 1): a lost worker's replica is dropped whole, since its other "
              "slices cannot compute without it, and no replica would be left; use restart "
              "(a replacement takes over the slice), or shards.count >= 2");
  }
}

}  // namespace dt::config::detail
