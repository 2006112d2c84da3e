// fault_tolerance.elastic: how few and how many workers the run may have, and how long it waits
// for joiners below the minimum; then what elastic membership needs of the rest of the config.
// docs/elastic.md says what a leave and a join do.

#include <fmt/format.h>

#include <climits>

#include "core/config/internal.hpp"

namespace dt::config::detail {

namespace {

// fault_tolerance.elastic.admit_at_steps (testing: deterministic joins): ascending steps >= 0.
std::vector<int> parse_admit_at_steps(const Section& s) {
  if (!s.has("admit_at_steps")) return {};
  const YAML::Node list = s.node("admit_at_steps");
  if (!list.IsSequence()) {
    s.fail("admit_at_steps", fmt::format("expected a list of steps like [40, 100], got {}",
                                         describe(list)));
  }
  std::vector<int> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", s.path("admit_at_steps"), i);
    steps.push_back(to_int(s.reader().integer(list[i], path, steps.empty() ? 0 : steps.back(),
                                              INT_MAX)));
  }
  return steps;
}

}  // namespace

ElasticConfig parse_elastic(const Section& s) {
  ElasticConfig e;
  e.min_workers = to_int(s.integer("min_workers", e.min_workers, 1));
  if (s.has("max_workers")) e.max_workers = to_int(s.integer("max_workers", 0, 1));
  e.join_timeout_ms = to_int(s.integer("join_timeout_ms", e.join_timeout_ms, 0));
  e.admit_at_steps = parse_admit_at_steps(s);
  return e;
}

void check_elastic(const Section& root, const Config& c) {
  const Section ft = root.section("fault_tolerance");
  if (!c.fault_tolerance.elastic) {
    for (std::size_t i = 0; i < c.faults.size(); ++i) {
      if (c.faults[i].action != FaultAction::kLeave) continue;
      root.item("faults", i)
          .fail("action", "leave is a planned leave, which needs fault_tolerance.elastic (e.g. "
                          "elastic: {min_workers: 1}); without it use kill to lose a worker");
    }
    return;
  }
  const Section s = ft.section("elastic");
  const auto& e = *c.fault_tolerance.elastic;
  const int workers = worker_count(c);
  if (e.min_workers > workers) {
    s.fail("min_workers", fmt::format("is {}, above the {} workers the run starts with "
                                      "(shards.count); set min_workers <= {}",
                                      e.min_workers, workers, workers));
  }
  if (e.max_workers < workers) {
    s.fail("max_workers", fmt::format("is {}, below the {} workers the run starts with "
                                      "(shards.count); set max_workers >= {}",
                                      e.max_workers, workers, workers));
  }
  // A leave re-plans the rows of a data-parallel worker between steps (gradients: star, sharded
  // servers, ring), rounds (parameters) or pushes (async: its servers stop counting it). Tensor
  // parallelism keeps model slices per worker that a leave would need to move: a later slice of
  // issue 18.
  if (c.parallelism.tensor > 1) {
    s.fail_here(fmt::format("is available with data parallelism only (parallelism.tensor 1), "
                            "not with parallelism.tensor {} yet; remove fault_tolerance.elastic "
                            "(a lost worker is then handled by on_worker_failure)",
                            c.parallelism.tensor));
  }
  // A join deals rows between steps (gradients), rounds (parameters) or pushes (async).
  if (e.max_workers > workers && !admits_joiners(c)) {
    s.fail("max_workers", fmt::format("is {}, above the {} workers the run starts with: workers "
                                      "may join only in {} yet; set max_workers: {} (leaving "
                                      "works in every mode)",
                                      e.max_workers, workers, joinable_modes(), workers));
  }
  if (e.max_workers > workers && c.shards.strategy == ShardStrategy::kFiles) {
    s.fail("max_workers", fmt::format("is {}, above the {} workers the run starts with, but "
                                      "shards.strategy files gives each worker its own file: a "
                                      "joiner would have none; set max_workers: {}",
                                      e.max_workers, workers, workers));
  }
  if (c.transport.type == TransportType::kInproc) {
    s.fail_here("needs worker processes (a worker leaves when it gets SIGTERM), but "
                "transport.type inproc runs the workers as threads of one process; use "
                "transport.type ipc or tcp");
  }
}

}  // namespace dt::config::detail

namespace dt::config {

bool admits_joiners(const Config& config) {
  // Async's max_staleness would hold every worker back until a joiner, whose step clock starts
  // at 0, caught up with them: refused. Sparse rows join wherever dense rows do: the keyed
  // exchanges (star, sharded servers, async) give a joiner its first batch's values; the ring
  // and parameters mode move dense vectors, a member's state or the merged model, as for dense
  // rows; the joiner reads its sparse rows at the re-plan as every member does.
  const auto& a = config.aggregation;
  const bool async = a.mode == AggregationMode::kAsync && !a.async.max_staleness;
  return (a.mode == AggregationMode::kGradients || a.mode == AggregationMode::kParameters ||
          async) &&
         config.parallelism.tensor == 1;
}

const char* joinable_modes() {
  return "gradients mode (star, sharded servers, ring), parameters mode (at a round boundary) "
         "and async mode without max_staleness";
}

}  // namespace dt::config
