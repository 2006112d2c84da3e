#pragma once
// The fault_tolerance section (failure policy, checkpoints, stragglers, elastic membership) and
// the faults a test injects, as validated plain structs (parsed in sections_faults.cpp and
// sections_elastic.cpp); part of config.hpp's Config.

#include "core/config/names.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace dt::config {

// fault_tolerance.elastic (sections_elastic.cpp, docs/elastic.md): the worker count may change
// during the run. Workers may leave on purpose (SIGTERM) and join (`disttrain worker --join`),
// up to max_workers at a time.
struct ElasticConfig {
  int min_workers = 1;           // fewer left: wait join_timeout_ms for joiners, then fail
  int max_workers = 0;           // 0 in the file's absence: the starting worker count
  int join_timeout_ms = 60000;   // the wait below min_workers (and at an admit_at_steps step)
  // Testing: joiners are admitted only after these steps (loss.csv's numbering), one at each,
  // which the run waits for (join_timeout_ms); empty: at the first step boundary they reach.
  std::vector<int> admit_at_steps;
};

struct FaultToleranceConfig {
  int heartbeat_ms = 200;
  int worker_timeout_ms = 3000;
  FailurePolicy on_worker_failure = FailurePolicy::kAbort;
  int max_restarts = 3;                       // restart: replacements over the whole run
  std::int64_t checkpoint_every_steps = 100;  // 0: only when a run stops early
  double straggler_factor = 2.0;              // warn at k x the median step time; 0: never
  std::optional<ElasticConfig> elastic;       // absent: the worker set is fixed
};

// `faults:` (and --fault): injected failures, a testing feature. Exactly one of at_step and
// probability says when: at_step fires at that worker step (kill, hang: once; slow, drop,
// delay: every step from then on); probability p fires independently at each step (kill,
// hang, slow) or each message (drop, delay), drawn from (seed, rank, step).
struct FaultConfig {
  int rank = 0;
  // A parameter server's fault instead of a worker's (`server: k`, kill or hang): the server
  // thread of key range k; -1 for a worker fault (`rank`). Its steps are the server's updates.
  int server = -1;
  FaultAction action = FaultAction::kKill;
  std::optional<std::uint64_t> at_step;
  double probability = 0;  // used when at_step is absent
  int ms = 100;            // slow: extra milliseconds per step; delay: per message
  std::uint64_t seed = 0;  // defaults to the run's seed
};

}  // namespace dt::config
