// fault_tolerance.elastic: how few and how many workers the run may have, and how long it waits
// for joiners below the minimum; then what elastic membership needs of the rest of the config.
// docs/elastic.md says what a leave does.

#include <fmt/format.h>

#include <climits>

#include "core/config/internal.hpp"

namespace dt::config::detail {

ElasticConfig parse_elastic(const Section& s) {
  ElasticConfig e;
  e.min_workers = to_int(s.integer("min_workers", e.min_workers, 1));
  if (s.has("max_workers")) e.max_workers = to_int(s.integer("max_workers", 0, 1));
  e.join_timeout_ms = to_int(s.integer("join_timeout_ms", e.join_timeout_ms, 0));
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
  if (c.transport.type == TransportType::kInproc) {
    s.fail_here("needs worker processes (a worker leaves when it gets SIGTERM), but "
                "transport.type inproc runs the workers as threads of one process; use "
                "transport.type ipc or tcp");
  }
}

}  // namespace dt::config::detail
